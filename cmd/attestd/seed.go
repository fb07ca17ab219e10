package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/node"
	"github.com/attestd/attestd/internal/purge"
)

func runSeed(ctx context.Context, args []string) error {
	_, err := seedWith(ctx, nil, args)
	return err
}

// seedWith is the seed command reading its settings from getenv (nil: the
// process environment, or a running make run's stores): make run seeds
// with the stores it started. usedThrough is the newest slot the
// database's data is known to use: the seed's last slot, or, when it had
// data already, the log's frontier (every slot up to it is stored whole).
// make run's chain starts after it.
func seedWith(ctx context.Context, getenv func(string) string, args []string) (usedThrough uint64, err error) {
	fs := newFlags("seed")
	agents := fs.Int("agents", 50, "agents to register")
	atts := fs.Int("attestations", 100_000, "attestations to write")
	seedN := fs.Uint64("seed", 1, "random seed (same seed, same data)")
	ifEmpty := fs.Bool("if-empty", false, "do nothing when the database already holds attestations")
	batch := fs.Int("batch", 2000, "attestations per write transaction")
	if err := parseFlags(fs, args); err != nil {
		return 0, err
	}
	if *agents < 1 || *atts < 0 || *batch < 1 || *batch > 50_000 {
		return 0, usageErrorf("seed: --agents must be >= 1, --attestations >= 0 and --batch from 1 to 50000")
	}
	cfg, log, st, err := commandStore(ctx, getenv)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return 0, err
	}
	if *ifEmpty {
		s, err := st.Stats(ctx, time.Now())
		if err != nil {
			return 0, err
		}
		if s.Attestations > 0 {
			log.Info("database already seeded", "attestations", s.Attestations)
			frontier, _, err := st.LogFrontier(ctx)
			return frontier, err
		}
	}
	if cfg.RedisURL != "" {
		rdb, err := node.OpenRedis(ctx, cfg)
		if err != nil {
			return 0, err
		}
		defer rdb.Close()
		pcfg, err := purge.ConfigFromEnv(getenv)
		if err != nil {
			return 0, fmt.Errorf("purge hook: %w", err)
		}
		closeCache, err := node.OpenWriterCache(ctx, cfg, pcfg, rdb, st, nil, log)
		if err != nil {
			return 0, err
		}
		defer closeCache()
	}
	bar := newProgressLine(os.Stderr)
	res, err := seed.Run(ctx, st, seed.Options{Agents: *agents, Attestations: *atts, Seed: *seedN, Logger: log,
		BatchSize: *batch, Progress: bar.show})
	bar.done()
	if err != nil {
		return 0, err
	}
	log.Info("seeded", "agents", len(res.Agents), "attestations", res.Attestations, "duration", res.Duration.String(),
		"slots", fmt.Sprintf("1..%d", res.LastSlot))
	printSamples(os.Stdout, res.Samples)
	frontier, _, err := st.LogFrontier(ctx)
	return max(res.LastSlot, frontier), err
}

// printSamples shows the attestations whose payloads the seed published,
// so a person can check one on the explorer's attestation page.
func printSamples(w io.Writer, samples []seed.Sample) {
	if len(samples) == 0 {
		return
	}
	fmt.Fprintf(w, "Sample payloads (published: the explorer's attestation page offers \"Try the sample payload\"):\n")
	for _, s := range samples {
		fmt.Fprintf(w, "  attestation %s\n    actionHash %s\n    payload    %s\n", s.PDA, s.ActionHash, s.Payload)
	}
}

// progressLine shows a long run's progress on w: one line rewritten in
// place on a terminal, a new line every 10 s otherwise (logs, CI).
type progressLine struct {
	w        io.Writer
	terminal bool
	last     time.Time
	shown    bool
}

func newProgressLine(f *os.File) *progressLine {
	st, err := f.Stat()
	return &progressLine{w: f, terminal: err == nil && st.Mode()&os.ModeCharDevice != 0}
}

func (p *progressLine) show(pr seed.Progress) {
	every := 10 * time.Second
	if p.terminal {
		every = 250 * time.Millisecond
	}
	if time.Since(p.last) < every && pr.Done < pr.Total {
		return
	}
	p.last = time.Now()
	line := fmt.Sprintf("seeding: %d / %d attestations (%.1f%%), %.0f/s, elapsed %s, ETA %s",
		pr.Done, pr.Total, 100*float64(pr.Done)/float64(max(pr.Total, 1)), pr.Rate,
		pr.Elapsed.Round(time.Second), pr.ETA)
	if p.terminal {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
	p.shown = true
}

// done ends the rewritten line.
func (p *progressLine) done() {
	if p.terminal && p.shown {
		fmt.Fprintln(p.w)
	}
}
