package translog

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/translog/logreport"
)

// witnessLagAlarm is how long the newest checkpoint may wait for its
// quorum of cosignatures before /health says degraded.
const witnessLagAlarm = 30 * time.Second

// Health reports the log's state for /health (app.Deps.Log): what this
// node serves, the newest checkpoint, and each witness (one query). The
// reason is set when the quorum has not cosigned the newest checkpoint for
// witnessLagAlarm (what is served then is the last one it did: the log
// is fail-closed), or a witness refuses.
func (s *Server) Health(ctx context.Context) (*logreport.Health, string) {
	cfg := s.opt.Config
	if !cfg.Enabled() {
		return nil, ""
	}
	h := &logreport.Health{Origin: cfg.Origin(), Quorum: cfg.Quorum, Newest: s.newest.Load(), WitnessedBy: []string{}, Witnesses: []logreport.Witness{}}
	cur := s.latest.Load()
	if cur != nil {
		h.Size = cur.Size
		for _, w := range cfg.Witnesses {
			if strings.Contains(cur.Note, "\n— "+w.Name+" ") {
				h.WitnessedBy = append(h.WitnessedBy, w.Name)
			}
		}
	}
	var reasons []string
	if hold := s.hold.Load(); hold != nil {
		if !hold.HeldSince.IsZero() {
			reasons = append(reasons, fmt.Sprintf("log: restored from a backup at %s; held until the appender has asked the witnesses which size they cosigned", hold.HeldSince.UTC().Format(time.RFC3339)))
		} else {
			reasons = append(reasons, "log: "+regrowReason(cfg.Origin(), *hold))
		}
	}
	if len(cfg.Witnesses) == 0 {
		return h, strings.Join(reasons, "; ")
	}
	states, err := s.opt.Store.LogWitnesses(ctx, cfg.Origin())
	if err != nil {
		return h, "log: the witnesses' state cannot be read now"
	}
	byKey := map[string]int{}
	for i, st := range states {
		byKey[st.Witness] = i
	}
	for _, w := range cfg.Witnesses {
		wh := logreport.Witness{Name: w.Name, Key: w.VerifierKey}
		if i, ok := byKey[w.VerifierKey]; ok {
			wh.Size, wh.Error = states[i].Size, states[i].Error
			if wh.Error != "" && states[i].FailingSince != nil && time.Since(*states[i].FailingSince) > witnessLagAlarm {
				reasons = append(reasons, fmt.Sprintf("log: witness %s fails since %s: %s", w.Name, states[i].FailingSince.UTC().Format(time.RFC3339), excerpt.Of(wh.Error, 128)))
			}
		}
		h.Witnesses = append(h.Witnesses, wh)
	}
	if b := s.behind.Load(); h.Newest > h.Size && b != 0 && time.Since(time.Unix(0, b)) > witnessLagAlarm {
		reasons = append([]string{fmt.Sprintf("log: the newest checkpoint (size %d) is not cosigned by %d of the %d witnesses; the last one that was (size %d) is served (fail-closed)",
			h.Newest, cfg.Quorum, len(cfg.Witnesses), h.Size)}, reasons...)
	}
	return h, strings.Join(reasons, "; ")
}
