package store

import (
	"context"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
)

// BenchmarkActivityAndAgents reads the explorer's new queries, uncached,
// over counters of 200,000 attestations spread over 365 days (1,000
// agents): the activity series of every agent by hour for 7 days and by
// day for the whole year, one agent's whole year, and a page of agents.
func BenchmarkActivityAndAgents(b *testing.B) {
	st := open(b)
	ctx := context.Background()
	_, err := st.Pool().Exec(ctx, `
		INSERT INTO agents (pda, operator, agent_id, policy_root, initial_policy_root, registered_at, updated_at, tx_signature, event_index, slot, finalized)
		SELECT 'agent' || a, 'op' || a, sha256(a::text::bytea), sha256(a::text::bytea), sha256(a::text::bytea),
			now() - interval '400 days', now() - interval '400 days', 'reg' || a, 0, a, true
		FROM generate_series(1, 1000) a;
		INSERT INTO attestations (pda, agent_pda, agent_id, action_type, action_hash, privacy_mode, ts, agent_signature,
			signature_valid, tx_signature, event_index, slot, finalized)
		SELECT 'pda' || i, 'agent' || (i % 1000 + 1), sha256((i % 1000)::text::bytea), i % 7, sha256(i::text::bytea), false,
			now() - (i || ' seconds')::interval * 157, sha256(i::text::bytea) || sha256(i::text::bytea), true,
			'tx' || i, 0, 1000000000 - i, true
		FROM generate_series(1, 200000) i;
		INSERT INTO attestation_hours SELECT COALESCE(agent_pda, ''), COALESCE(action_type, -1), hour, count(*), 0
		FROM (SELECT agent_pda, action_type, date_trunc('hour', ts, 'UTC') AS hour FROM attestations) a
		GROUP BY GROUPING SETS ((agent_pda, action_type, hour), (agent_pda, hour), (action_type, hour), (hour));
		INSERT INTO attestation_counts SELECT agent_pda, action_type, count(*) FROM attestations GROUP BY 1, 2;`)
	testenv.Must(b, err, "load")
	_, err = st.Pool().Exec(ctx, "VACUUM ANALYZE")
	testenv.Must(b, err, "vacuum")
	now := time.Now().UTC().Truncate(time.Hour).Add(time.Hour)
	day := now.Truncate(24 * time.Hour).Add(24 * time.Hour)
	for _, bc := range []struct {
		name string
		run  func() error
	}{
		{"global 7 days by hour", func() error { _, err := st.GetActivity(ctx, "", BucketHour, now.Add(-7*24*time.Hour), now); return err }},
		{"global 365 days by day", func() error {
			_, err := st.GetActivity(ctx, "", BucketDay, day.Add(-366*24*time.Hour), day)
			return err
		}},
		{"agent 365 days by day", func() error {
			_, err := st.GetActivity(ctx, "agent7", BucketDay, day.Add(-366*24*time.Hour), day)
			return err
		}},
		{"agents page of 100", func() error { _, err := st.ListAgents(ctx, AgentFilter{Limit: 100}); return err }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if err := bc.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
