package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/attestd/attestd/indexer"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/purge"
	"github.com/attestd/attestd/internal/settings"
	"github.com/attestd/attestd/internal/webhook"
	"golang.org/x/sys/unix"
)

// exitUsage is the status of a command line attestd cannot act on (an
// unknown command or flag, a missing argument), as the flag package and
// most tools use.
const exitUsage = 2

// usageError is a mistake in the command line: main prints it with a hint
// to `attestd help CMD` and exits with exitUsage.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// usageErrorf makes a usageError.
func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...)}
}

// required names the first of flags (name, value pairs in order) left
// empty: "keys list: --account is required".
func required(cmd string, flags ...string) error {
	for i := 0; i+1 < len(flags); i += 2 {
		if flags[i+1] == "" {
			return usageErrorf("%s: --%s is required", cmd, flags[i])
		}
	}
	return nil
}

// newFlags is a flag set for command name ("serve", "keys create") whose
// parse errors are usage errors and whose -h prints the command's help
// (see parseFlags).
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parseFlags reports; the flag package stays quiet
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args into fs: -h/--help prints the command's help on
// stdout (and returns flag.ErrHelp, which main treats as success); any
// other problem is a usageError.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		writeHelp(os.Stdout, fs.Name(), fs)
		return err
	}
	return usageError{err.Error()}
}

// helpInfo is what `attestd help CMD` says beyond the flags.
type helpInfo struct {
	usage   string       // the synopsis (default: attestd NAME [flags])
	vars    []config.Var // the environment variables the command reads
	example string
}

// one-shot commands reading the database (and Redis to announce changes)
// need few of the common variables.
var storeVars = settings.Pick(config.Vars, "DATABASE_URL", "REDIS_URL", "ATTESTD_REDIS_PREFIX", "ATTESTD_LOG_LEVEL", "ATTESTD_LOG_FORMAT")

// help is each command's help beyond its flags.
var help = map[string]helpInfo{
	"serve":   {vars: settings.ServeVars, example: "DATABASE_URL=postgres://... REDIS_URL=redis://... attestd serve"},
	"index":   {vars: settings.IndexVars, example: "ATTESTD_SOLANA_RPC_URL=https://api.devnet.solana.com DATABASE_URL=postgres://... attestd index"},
	"dataset": {vars: settings.DatasetVars, example: "ATTESTD_DATASET_BUCKET='s3://attestd-data?region=eu-west-1' ATTESTD_LOG_KEY=... DATABASE_URL=... attestd dataset"},
	"worker":  {vars: settings.WorkerVars, example: "ATTESTD_WEBHOOK_SECRET_KEYS=... DATABASE_URL=... REDIS_URL=... attestd worker"},
	"migrate": {vars: storeVars, example: "DATABASE_URL=postgres://... attestd migrate\n" +
		"attestd migrate        # while make run runs: uses its stores (.run/stores.env)"},
	"backup":  {usage: backupUsage, vars: storeVars, example: "attestd backup --dir /var/backups/attestd   # daily, from cron or a systemd timer"},
	"restore": {usage: restoreUsage, vars: storeVars, example: "createdb attestd_restored && DATABASE_URL=postgres://.../attestd_restored attestd restore attestd-20261129T030000Z.dump"},
	"seed":    {vars: settings.Join(storeVars, purge.Vars), example: "attestd seed --agents 10 --attestations 1000"},
	"keys": {usage: keysUsage, vars: settings.Join(storeVars, apikey.Vars),
		example: "attestd keys create --account demo --label laptop   # while make run runs, in a second terminal"},
	"accounts": {usage: accountsUsage, vars: storeVars,
		example: "attestd accounts link-wallet --account demo --wallet 7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU"},
	"verify": {usage: verifyUsage, example: "attestd verify 7Hq...PDA --log-key 'attestd.example/log+1a2b3c4d+AV...' --url https://attestd.example\n" +
		"attestd verify --monitor --log-key 'attestd.example/log+1a2b3c4d+AV...' --url https://attestd.example --watch 1m"},
	"log": {usage: logUsage, vars: settings.Join(settings.Pick(config.Vars, "ATTESTD_PUBLIC_URL"), storeVars),
		example: "attestd log keygen --name attestd.example.com/log"},
	"payments": {usage: paymentsUsage, vars: storeVars, example: "attestd payments list --status pending --since 24h"},
	"mcp": {usage: "usage: attestd mcp [--http ADDR]", vars: settings.MCPVars,
		example: "ATTESTD_API_URL=http://127.0.0.1:8080 attestd mcp"},
	"local": {vars: settings.LocalVars,
		example: "attestd local            # what make run does\nattestd local --reset    # delete the demo data (make reset)"},
	"cluster": {vars: settings.Pick(config.Vars, "ATTESTD_LOG_FORMAT"), example: "attestd cluster -redis-cluster   # what make cluster CLUSTER=redis-cluster does"},
	"devnet":  {vars: settings.Pick(indexer.Vars, "ATTESTD_PROGRAM_ID"), example: "attestd devnet --addr 127.0.0.1:8899 --rate 5"},
	"stores":  {usage: storesUsage, example: "attestd stores -- go test -count=1 ./internal/store/..."},
	"healthcheck": {vars: append(append(settings.Pick(config.Vars, "ATTESTD_HTTP_ADDR"), settings.Pick(indexer.Vars, "ATTESTD_INDEXER_METRICS_ADDR")...),
		settings.Pick(webhook.Vars, "ATTESTD_WORKER_METRICS_ADDR")...), example: "attestd healthcheck -addr 127.0.0.1:8080 -q; attestd healthcheck -role index"},
	"version": {example: "attestd version     # or attestd --version"},
}

// writeHelp prints the help of command name (its first word names the
// top-level command) with the flags of fs (nil: none), wrapped to
// helpWidth's columns.
func writeHelp(w io.Writer, name string, fs *flag.FlagSet) {
	width := helpWidth()
	top, _, _ := strings.Cut(name, " ")
	c, _ := lookup(top)
	h := help[top]
	usage := h.usage
	if usage == "" || (name != top && fs != nil) {
		usage = "usage: attestd " + name + " [flags]"
	}
	var b strings.Builder
	b.WriteString(reflow(strings.TrimSpace(usage), width) + "\n\n")
	b.WriteString(wrapWords(c.summary, width, 0, 0) + "\n")
	if fs != nil && hasFlags(fs) {
		b.WriteString("\nflags:\n")
		writeFlags(&b, fs, width)
	}
	if vars := currentVars(h.vars); len(vars) > 0 {
		b.WriteString("\nenvironment (docs/configuration.md):\n")
		for _, v := range vars {
			text := v.Help
			if d := describeDefault(v.Default); d != "" {
				text += " (default: " + d + ")"
			}
			lead := "  " + v.Name + "  "
			if len(lead) > width/2 {
				b.WriteString(strings.TrimRight(lead, " ") + "\n" + wrapWords(text, width, 6, 6) + "\n")
				continue
			}
			b.WriteString(lead + strings.TrimLeft(wrapWords(text, width, len(lead), 6), " ") + "\n")
		}
	}
	if h.example != "" {
		b.WriteString("\nexample:\n")
		for _, line := range strings.Split(h.example, "\n") {
			b.WriteString(wrapCommand(line, width, 2) + "\n")
		}
	}
	io.WriteString(w, b.String())
}

// currentVars is vars without those a release removed (default
// "(removed)": a node refuses to start with one set; docs/configuration.md
// says so, help lists only what may be set).
func currentVars(vars []config.Var) []config.Var {
	var out []config.Var
	for _, v := range vars {
		if v.Default != "(removed)" {
			out = append(out, v)
		}
	}
	return out
}

// describeDefault is a variable's default as help shows it after
// "default: ": without the parentheses of a description ("(none)":
// "none"); "" for no default.
func describeDefault(d string) string {
	if strings.HasPrefix(d, "(") && strings.HasSuffix(d, ")") && strings.Count(d, "(") == 1 {
		return d[1 : len(d)-1]
	}
	return d
}

// writeFlags writes fs's flags as flag.PrintDefaults does (--name TYPE,
// then the usage on the next lines), wrapped to width. The default is
// added when it is not the type's zero value, unless the usage names its
// own ("(default: all of them)": the value given is then a sentinel).
func writeFlags(b *strings.Builder, fs *flag.FlagSet, width int) {
	fs.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		head := "--" + f.Name
		if typ != "" {
			head += " " + typ
		}
		if !strings.Contains(usage, "(default") && !isZeroValue(f) {
			def := f.DefValue
			if typ == "string" {
				def = strconv.Quote(def)
			}
			usage += " (default " + def + ")"
		}
		b.WriteString(wrapWords(head, width, 2, 6) + "\n")
		b.WriteString(wrapWords(usage, width, 6, 6) + "\n")
	})
}

// isZeroValue reports whether f's default is its type's zero value, as
// the flag package decides before printing "(default ...)".
func isZeroValue(f *flag.Flag) (zero bool) {
	defer func() {
		if recover() != nil {
			zero = false
		}
	}()
	typ := reflect.TypeOf(f.Value)
	var z reflect.Value
	if typ.Kind() == reflect.Pointer {
		z = reflect.New(typ.Elem())
	} else {
		z = reflect.Zero(typ)
	}
	v, ok := z.Interface().(flag.Value)
	return ok && f.DefValue == v.String()
}

// helpWidth is the columns help wraps to: COLUMNS when set, else the
// terminal's width when standard output is one, else 80; at least 40 and
// at most 100 (longer lines read badly).
func helpWidth() int {
	w := 80
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		w = n
	} else if ws, err := unix.IoctlGetWinsize(int(os.Stdout.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
		w = int(ws.Col)
	}
	return min(max(w, 40), 100)
}

// wrapWords fills text's words into lines of at most width columns, the
// first indented by indent spaces, the others by hang. A word longer than
// a line is cut.
func wrapWords(text string, width, indent, hang int) string {
	var lines []string
	line, pad := "", indent
	for _, word := range strings.Fields(text) {
		for {
			room := max(width-pad, 1)
			switch {
			case line == "" && utf8.RuneCountInString(word) <= room:
				line = word
			case line != "" && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= room:
				line += " " + word
			case line != "":
				lines, line, pad = append(lines, strings.Repeat(" ", pad)+line), "", hang
				continue
			default: // longer than a whole line
				r := []rune(word)
				lines, word, pad = append(lines, strings.Repeat(" ", pad)+string(r[:room])), string(r[room:]), hang
				continue
			}
			break
		}
	}
	if line != "" || len(lines) == 0 {
		lines = append(lines, strings.Repeat(" ", pad)+line)
	}
	return strings.Join(lines, "\n")
}

// reflow wraps a usage text to width, unless every line fits already
// (then its layout stays). A line starting with "usage:" or "attestd "
// is a command, its continuation lines indented 8 more; the lines after
// it indented deeper (in a column of their own or below) describe it, in
// one paragraph indented 4 more; a command's text after a gap of 3 spaces
// or more is its description too. Other lines of one indentation make a
// paragraph.
func reflow(text string, width int) string {
	lines := strings.Split(text, "\n")
	fits := true
	for _, l := range lines {
		fits = fits && utf8.RuneCountInString(l) <= width
	}
	if fits {
		return text
	}
	var out []string
	var cur *paragraph
	flush := func() {
		if cur != nil {
			out = append(out, cur.render(width))
			cur = nil
		}
	}
	for _, l := range lines {
		text := strings.TrimSpace(l)
		ind := len(l) - len(strings.TrimLeft(l, " "))
		command := strings.HasPrefix(text, "usage:") || strings.HasPrefix(text, "attestd ")
		switch {
		case text == "":
			flush()
			out = append(out, "")
		case cur != nil && !cur.command && (ind > cur.indent || (ind == cur.indent && !command)):
			cur.text += " " + text
		case cur != nil && cur.command && ind > cur.indent && !command:
			at := cur.indent + 4
			flush()
			cur = &paragraph{text: text, indent: at, hang: at}
		default:
			flush()
			if !command {
				cur = &paragraph{text: text, indent: ind, hang: ind}
				continue
			}
			left, right, gap := strings.Cut(l[ind:], "   ")
			cur = &paragraph{text: left, indent: ind, hang: ind + 8, command: true}
			if gap {
				flush()
				cur = &paragraph{text: right, indent: ind + 4, hang: ind + 4}
			}
		}
	}
	flush()
	return strings.Join(out, "\n")
}

// paragraph is a run of usage text reflow fills into lines.
type paragraph struct {
	text         string
	indent, hang int
	command      bool
}

func (p *paragraph) render(width int) string { return wrapWords(p.text, width, p.indent, p.hang) }

// wrapCommand writes an example's shell command line indented by indent,
// as it is when it fits in width; else a trailing comment goes on lines of
// its own before it and the command is continued over lines ending in
// " \" (never inside quotes), so that it still runs when pasted.
func wrapCommand(line string, width, indent int) string {
	pad := strings.Repeat(" ", indent)
	if utf8.RuneCountInString(line)+indent <= width {
		return pad + line
	}
	words := shellWords(line)
	var out []string
	for i, w := range words {
		if w == "#" {
			out = append(out, wrapWords(strings.Join(words[i:], " "), width-2, indent, indent+2))
			for j := range out[len(out)-1:] {
				out[len(out)-1+j] = strings.ReplaceAll(out[len(out)-1+j], "\n"+pad+"  ", "\n"+pad+"# ")
			}
			words = words[:i]
			break
		}
	}
	cur, curPad := "", indent
	var cmd []string
	for _, w := range words {
		if cur != "" && curPad+utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(w)+2 > width {
			cmd = append(cmd, strings.Repeat(" ", curPad)+cur+" \\")
			cur, curPad = "", indent+4
		}
		if cur != "" {
			cur += " "
		}
		cur += w
	}
	cmd = append(cmd, strings.Repeat(" ", curPad)+cur)
	return strings.Join(append(out, cmd...), "\n")
}

// shellWords splits a command line at spaces outside quotes.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == ' ':
			if cur.Len() > 0 {
				words = append(words, cur.String())
				cur.Reset()
			}
			continue
		}
		cur.WriteRune(r)
	}
	if cur.Len() > 0 {
		words = append(words, cur.String())
	}
	return words
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// suggest is the command nearest to name by edit distance, when one is
// near enough to be a typo ("" otherwise).
func suggest(name string) string {
	// A command the name starts (3 letters or more) is what was meant,
	// before any nearer by edits ("loc": local, not log).
	if len(name) >= 3 {
		for _, c := range commands {
			if strings.HasPrefix(c.name, strings.ToLower(name)) {
				return c.name
			}
		}
	}
	best, bestD := "", 1<<30
	for _, c := range commands {
		if d := editDistance(strings.ToLower(name), c.name); d < bestD {
			best, bestD = c.name, d
		}
	}
	// Two edits (a swapped pair of letters) from a name of 3 letters or
	// more, a third of a long name's letters, or its start.
	if (bestD <= max(2, len(best)/3) && bestD < len(name)) || (len(name) >= 3 && strings.HasPrefix(best, strings.ToLower(name))) {
		return best
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
