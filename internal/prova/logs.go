package prova

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gagliardetto/solana-go"
)

// Log line prefixes written by the Solana runtime.
const (
	logProgram   = "Program "
	logData      = "Program data: "
	logLog       = "Program log: "
	logReturn    = "Program return: "
	logTruncated = "Log truncated"
	// MaxInvokeDepth bounds the invoke stack the parser accepts.
	MaxInvokeDepth = 64
)

// ErrLogsTruncated is returned when the runtime cut the logs short: events
// may be missing, so the event indexes cannot be trusted.
var ErrLogsTruncated = errors.New("logs truncated")

// ErrMalformedLogs is returned when the invoke stack in the logs is
// inconsistent or the program's event data is not valid base64.
var ErrMalformedLogs = errors.New("malformed logs")

// LoggedEvent is one event the program emitted.
type LoggedEvent struct {
	// Index is the event's position among every "Program data:" entry the
	// program emitted in the transaction, 0-based. Entries with an unknown
	// discriminator are skipped but still take an index, so indexes never
	// shift when the program gains an event.
	Index int
	// Depth is the invoke depth of the program when it emitted the event
	// (1: top-level instruction).
	Depth int
	// Event is the decoded event.
	Event Event
}

// ParseLogs follows the invoke stack through a transaction's log messages
// and returns the events emitted while programID was the innermost executing
// program, in order. "Program data:" lines printed by any other program are
// ignored, however event-like they look. Lines it does not know (plain
// "Program log:" messages, compute-unit lines, return data) are skipped.
// Inconsistent stacks, undecodable data of programID and truncated logs are
// errors; it never panics.
func ParseLogs(logs []string, programID solana.PublicKey) ([]LoggedEvent, error) {
	ours := programID.String()
	var stack []string
	var out []LoggedEvent
	index := 0
	for n, line := range logs {
		switch {
		case strings.HasPrefix(line, logData):
			if len(stack) == 0 {
				return nil, fmt.Errorf("%w: line %d: data outside any program", ErrMalformedLogs, n)
			}
			if stack[len(stack)-1] != ours {
				continue
			}
			data, err := decodeLogData(line[len(logData):])
			if err != nil {
				return nil, fmt.Errorf("%w: line %d: %w", ErrMalformedLogs, n, err)
			}
			ev, err := DecodeEvent(data)
			switch {
			case errors.Is(err, ErrUnknownDiscriminator):
			case err != nil:
				return nil, fmt.Errorf("line %d: event %d: %w", n, index, err)
			default:
				out = append(out, LoggedEvent{Index: index, Depth: len(stack), Event: ev})
			}
			index++
		case strings.HasPrefix(line, logLog), strings.HasPrefix(line, logReturn):
			// Messages and return data change nothing.
		case strings.HasPrefix(line, logTruncated):
			return nil, fmt.Errorf("line %d: %w", n, ErrLogsTruncated)
		case strings.HasPrefix(line, logProgram):
			id, rest, ok := strings.Cut(line[len(logProgram):], " ")
			if !ok || !isBase58Key(id) {
				continue // "Program failed to complete: ..." and other free text
			}
			switch {
			case strings.HasPrefix(rest, "invoke ["):
				depth, err := parseDepth(rest[len("invoke "):])
				if err != nil {
					return nil, fmt.Errorf("%w: line %d: %w", ErrMalformedLogs, n, err)
				}
				if depth != len(stack)+1 || depth > MaxInvokeDepth {
					return nil, fmt.Errorf("%w: line %d: invoke depth %d at stack depth %d", ErrMalformedLogs, n, depth, len(stack))
				}
				stack = append(stack, id)
			case rest == "success", strings.HasPrefix(rest, "failed"):
				if len(stack) == 0 || stack[len(stack)-1] != id {
					return nil, fmt.Errorf("%w: line %d: %s returns but is not executing", ErrMalformedLogs, n, id)
				}
				stack = stack[:len(stack)-1]
			}
			// "consumed N of M compute units" and others: no change.
		}
	}
	return out, nil
}

// decodeLogData decodes the space-separated base64 fields of a
// "Program data:" line and concatenates them.
func decodeLogData(s string) ([]byte, error) {
	if !strings.Contains(s, " ") {
		return base64.StdEncoding.DecodeString(s)
	}
	var out []byte
	for _, f := range strings.Fields(s) {
		b, err := base64.StdEncoding.DecodeString(f)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

func parseDepth(s string) (int, error) {
	if len(s) < 3 || s[0] != '[' || s[len(s)-1] != ']' {
		return 0, fmt.Errorf("bad invoke depth %q", s)
	}
	d, err := strconv.Atoi(s[1 : len(s)-1])
	if err != nil || d < 1 {
		return 0, fmt.Errorf("bad invoke depth %q", s)
	}
	return d, nil
}

// isBase58Key reports whether s looks like a base58 address (32 to 44
// characters of the base58 alphabet); it does not decode.
func isBase58Key(s string) bool {
	if len(s) < 32 || len(s) > 44 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '1' && c <= '9', c >= 'A' && c <= 'H', c >= 'J' && c <= 'N', c >= 'P' && c <= 'Z',
			c >= 'a' && c <= 'k', c >= 'm' && c <= 'z':
		default:
			return false
		}
	}
	return true
}

// Log lines, as the runtime and Anchor write them; the simulator uses these.

// LogInvoke is "Program <id> invoke [<depth>]".
func LogInvoke(id solana.PublicKey, depth int) string {
	return "Program " + id.String() + " invoke [" + strconv.Itoa(depth) + "]"
}

// LogSuccess is "Program <id> success".
func LogSuccess(id solana.PublicKey) string { return "Program " + id.String() + " success" }

// LogFailed is "Program <id> failed: <reason>".
func LogFailed(id solana.PublicKey, reason string) string {
	return "Program " + id.String() + " failed: " + reason
}

// LogConsumed is "Program <id> consumed <used> of <budget> compute units".
func LogConsumed(id solana.PublicKey, used, budget uint64) string {
	return "Program " + id.String() + " consumed " + strconv.FormatUint(used, 10) + " of " + strconv.FormatUint(budget, 10) + " compute units"
}

// LogMessage is "Program log: <msg>".
func LogMessage(msg string) string { return logLog + msg }

// LogData is "Program data: <base64>", as Anchor's emit! writes an event.
func LogData(data []byte) string { return logData + base64.StdEncoding.EncodeToString(data) }

// LogInstruction is Anchor's "Program log: Instruction: <Name>".
func LogInstruction(name string) string { return logLog + "Instruction: " + name }

// LogAnchorError is the line Anchor writes when an instruction returns one
// of the program's errors through require!/err!.
func LogAnchorError(e ProgramError, file string, line int) string {
	return fmt.Sprintf("%sAnchorError thrown in %s:%d. Error Code: %s. Error Number: %d. Error Message: %s.",
		logLog, file, line, e.Name, e.Code, e.Msg)
}

// CustomErrorReason is the runtime's failure reason for a custom program
// error: "custom program error: 0x1772".
func CustomErrorReason(code int) string { return fmt.Sprintf("custom program error: 0x%x", code) }
