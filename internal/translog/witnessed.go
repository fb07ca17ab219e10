package translog

import (
	"context"
	"fmt"
	"strings"

	"github.com/attestd/attestd/internal/store"
)

// Cosigned is checkpoint c's note followed by those of the cosignature
// lines (C2SP tlog-cosignature) that verify with one of witnesses, and how
// many did: a line that does not verify is left out and not counted.
func Cosigned(c store.LogCheckpoint, lines []string, witnesses []Witness) (note string, witnessed int) {
	text, _, _ := strings.Cut(c.Note, "\n\n")
	note = c.Note
	for _, l := range lines {
		if checkCosignature(text, l, witnesses) {
			note += l
			witnessed++
		}
	}
	return note, witnessed
}

// WitnessedCheckpoint reads the newest checkpoint that cfg's witness
// quorum cosigned, its note carrying the cosignatures that verify (the
// checkpoint an API node serves). ok is false when there is none, and
// while the log is held or regrows to its witnessed size after a restore:
// what the database holds then may be older than what clients hold.
func WitnessedCheckpoint(ctx context.Context, st *store.Store, cfg Config) (c store.LogCheckpoint, witnessed int, ok bool, err error) {
	keys := make([]string, len(cfg.Witnesses))
	for i, w := range cfg.Witnesses {
		keys[i] = w.VerifierKey
	}
	c, lines, _, ok, err := st.LatestWitnessedCheckpoint(ctx, cfg.Origin(), cfg.Quorum, keys)
	if err != nil || !ok {
		return store.LogCheckpoint{}, 0, false, err
	}
	hold, err := st.ReadLogHold(ctx)
	if err != nil {
		return store.LogCheckpoint{}, 0, false, fmt.Errorf("read the log's hold: %w", err)
	}
	if hold.Regrowing() || c.Size < hold.WitnessedSize {
		return store.LogCheckpoint{}, 0, false, nil
	}
	c.Note, witnessed = Cosigned(c, lines, cfg.Witnesses)
	if witnessed < cfg.Quorum {
		return store.LogCheckpoint{}, witnessed, false, nil
	}
	return c, witnessed, true, nil
}
