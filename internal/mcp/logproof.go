package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/translog/logformat"
)

// LogStatus is the outcome of a log check (an enum in the tool's schema).
type LogStatus string

// KeySource says where the verifier key came from (an enum in the schema).
type KeySource string

// Log verification statuses of get_attestation.
const (
	LogVerified    LogStatus = "verified"
	LogNotLogged   LogStatus = "not_logged"
	LogFailed      LogStatus = "failed"
	LogUnavailable LogStatus = "unavailable"
)

// LogStatuses lists every LogVerification status.
var LogStatuses = []LogStatus{LogVerified, LogNotLogged, LogFailed, LogUnavailable}

// Key sources of a LogVerification.
const (
	// KeyPinned: ATTESTD_MCP_LOG_KEY, the key the operator published.
	KeyPinned KeySource = "pinned"
	// KeyService: the service's own GET /log/key (no pinned key): the
	// proof is consistent with what the service says its key is, which
	// does not prove the operator's key signed it.
	KeyService KeySource = "service"
)

// AttestationOutput is get_attestation's answer: the attestation and the
// check of its transparency log proof made here.
type AttestationOutput struct {
	client.Attestation
	Log LogVerification `json:"log" jsonschema:"the transparency log proof of the attestation, checked by this server"`
}

// LogVerification is the outcome of checking an attestation's log proof:
// the checkpoint's signature, the leaf recomputed from the attestation
// and the inclusion proof (package client, VerifyInclusion).
type LogVerification struct {
	Status    LogStatus `json:"status" jsonschema:"verified: in the log at leafIndex of a tree of treeSize, proof and checkpoint signature checked; not_logged: not finalized or not yet appended; failed: the proof does not verify (see reason); unavailable: the service runs no log or could not be asked"`
	LeafIndex *int64    `json:"leafIndex,omitempty" jsonschema:"the attestation's leaf index (when verified)"`
	TreeSize  *int64    `json:"treeSize,omitempty" jsonschema:"the size of the signed tree the proof is against (when verified)"`
	KeyName   string    `json:"keyName,omitempty" jsonschema:"the name of the log key that signed the checkpoint (when verified)"`
	KeySource KeySource `json:"keySource,omitempty" jsonschema:"pinned: ATTESTD_MCP_LOG_KEY; service: the service's own GET /log/key, which proves consistency with what it says, not the operator's signature"`
	// The witness policy (ATTESTD_MCP_LOG_WITNESSES): absent without one.
	Witnesses   int      `json:"witnesses,omitempty" jsonschema:"how many witnesses this server trusts (ATTESTD_MCP_LOG_WITNESSES); absent: no witness policy, the log's signature alone"`
	Quorum      int      `json:"quorum,omitempty" jsonschema:"how many of them must have cosigned the checkpoint"`
	WitnessedBy []string `json:"witnessedBy,omitempty" jsonschema:"the trusted witnesses whose cosignature of the checkpoint verified (when verified)"`
	Reason      string   `json:"reason,omitempty" jsonschema:"why it is not verified"`
}

// logKey is the verifier of the log: the pinned key, or the service's
// (fetched once, again after a failure).
type logKey struct {
	pinned  *client.LogVerifier
	mu      sync.Mutex
	fetched *client.LogVerifier
	// quorum of witnesses must have cosigned (none: no witness policy).
	quorum    int
	witnesses []string
}

// witnessPolicy checks a witness policy: quorum of these verifier keys.
func witnessPolicy(quorum int, keys []string) (int, error) {
	if quorum < 1 || quorum > len(keys) {
		return 0, fmt.Errorf("a quorum of %d with %d witness keys", quorum, len(keys))
	}
	names := map[string]bool{}
	for _, k := range keys {
		v, err := logformat.ParseCosignatureKey(k)
		if err != nil {
			return 0, err
		}
		if names[v.Name()] {
			return 0, fmt.Errorf("witness %s listed twice", v.Name())
		}
		names[v.Name()] = true
	}
	return quorum, nil
}

// policy adds the witness policy, if any, to v.
func (k *logKey) policy(v *client.LogVerifier) (*client.LogVerifier, error) {
	if len(k.witnesses) == 0 {
		return v, nil
	}
	return v.WithWitnesses(k.quorum, k.witnesses...)
}

func (k *logKey) get(ctx context.Context, api *client.Client) (*client.LogVerifier, KeySource, error) {
	if k.pinned != nil {
		return k.pinned, KeyPinned, nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fetched != nil {
		return k.fetched, KeyService, nil
	}
	text, err := api.LogKey(ctx)
	if err != nil {
		return nil, "", err
	}
	v, err := client.NewLogVerifier(text)
	if err != nil {
		return nil, "", fmt.Errorf("the service's log key: %w", err)
	}
	if v, err = k.policy(v); err != nil {
		return nil, "", err
	}
	k.fetched = v
	return v, KeyService, nil
}

// verifyLog checks a's log proof; it never fails the tool.
func (s *Server) verifyLog(ctx context.Context, a *client.Attestation) LogVerification {
	p, err := s.api.LogProof(ctx, a.PDA)
	if err != nil {
		var ae *client.APIError
		switch {
		case errors.Is(err, client.ErrNotLogged):
			msg := "not finalized or not yet appended"
			if errors.As(err, &ae) && ae.Message != "" {
				msg = ae.Message
			}
			return LogVerification{Status: LogNotLogged, Reason: msg}
		case errors.As(err, &ae) && (ae.Status == http.StatusServiceUnavailable || ae.Status == http.StatusNotFound):
			return LogVerification{Status: LogUnavailable, Reason: "the service serves no transparency log: " + ae.Error()}
		}
		return LogVerification{Status: LogUnavailable, Reason: "cannot fetch the proof: " + err.Error()}
	}
	v, source, err := s.logKey.get(ctx, s.api)
	if err != nil {
		return LogVerification{Status: LogUnavailable, Reason: "cannot get the log's verifier key: " + err.Error()}
	}
	in, err := client.VerifyInclusion(v, a, p)
	if err != nil {
		return LogVerification{Status: LogFailed, KeySource: source, Witnesses: len(s.logKey.witnesses), Quorum: s.logKey.quorum, Reason: err.Error()}
	}
	return LogVerification{Status: LogVerified, LeafIndex: &in.LeafIndex, TreeSize: &in.TreeSize, KeyName: in.Checkpoint.KeyName, KeySource: source,
		Witnesses: len(s.logKey.witnesses), Quorum: s.logKey.quorum, WitnessedBy: witnessedBy(in.Checkpoint, s.logKey.witnesses)}
}

// witnessedBy names the trusted witnesses that cosigned cp (nil without a
// policy).
func witnessedBy(cp *client.Checkpoint, trusted []string) []string {
	if len(trusted) == 0 || cp == nil {
		return nil
	}
	return cp.Witnesses
}

// logText is the log verdict as a line of the tool's text.
func logText(l LogVerification) string {
	switch l.Status {
	case LogVerified:
		w := ""
		if l.Witnesses > 0 {
			w = fmt.Sprintf(", witnessed by %d of %d (%s), %d required", len(l.WitnessedBy), l.Witnesses, strings.Join(l.WitnessedBy, ", "), l.Quorum)
		}
		return fmt.Sprintf("transparency log: in the log at index %d of %d, verified (checkpoint signed by %s, key %s%s)",
			*l.LeafIndex, *l.TreeSize, l.KeyName, l.KeySource, w)
	case LogNotLogged:
		return "transparency log: not yet logged (" + l.Reason + ")"
	case LogFailed:
		return "transparency log: VERIFICATION FAILED: " + l.Reason
	}
	return "transparency log: unavailable (" + l.Reason + ")"
}
