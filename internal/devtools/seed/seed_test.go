package seed

import (
	"context"
	"crypto/ed25519"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/gagliardetto/solana-go"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func openStore(t *testing.T) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, testenv.Database(t), store.Options{MaxConns: 4})
	testenv.Must(t, err, "open store")
	t.Cleanup(st.Close)
	_, err = st.Migrate(ctx)
	testenv.Must(t, err, "migrate")
	return st
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestSeededDataIsRealistic checks what the demo data promises: real
// Ed25519 keys and signatures over the stored hashes, every action type,
// 90 days of history growing in pace, some revoked agents, some
// privacyMode records, everything finalized, pdas derived from
// (transaction, event index), transactions of one and of many events,
// agents a few busy and many quiet. Seeding again with the same seed
// writes nothing new.
func TestSeededDataIsRealistic(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	opt := Options{Agents: 20, Attestations: 3000, Seed: 5, Now: now, BatchSize: 700, Logger: quiet}
	res, err := Run(ctx, st, opt)
	testenv.Must(t, err, "seed")
	if res.Attestations != 3000 || len(res.Agents) != 20 {
		t.Fatalf("result: %d attestations, %d agents", res.Attestations, len(res.Agents))
	}
	pool := st.Pool()
	var (
		n, types, private, unfinalized, badFlag, singles, multis int
		first, last                                              time.Time
	)
	err = pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT action_type), count(*) FILTER (WHERE privacy_mode),
		count(*) FILTER (WHERE NOT finalized), count(*) FILTER (WHERE NOT signature_valid), min(ts), max(ts)
		FROM attestations`).Scan(&n, &types, &private, &unfinalized, &badFlag, &first, &last)
	testenv.Must(t, err, "aggregate")
	if n != 3000 || types != attestation.NumActionTypes {
		t.Fatalf("%d attestations of %d action types, want 3000 of %d", n, types, attestation.NumActionTypes)
	}
	if private < n/10 || private > n*3/10 {
		t.Errorf("%d of %d privacyMode records, want about a fifth", private, n)
	}
	if unfinalized != 0 || badFlag != 0 {
		t.Errorf("%d unfinalized, %d flagged invalid: seeded attestations are finalized and correctly signed", unfinalized, badFlag)
	}
	if first.Before(now.Add(-90*24*time.Hour)) || last.After(now) || last.Sub(first) < 85*24*time.Hour {
		t.Errorf("timestamps %s .. %s, want about 90 days ending at %s", first, last, now)
	}
	err = pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE k = 1), count(*) FILTER (WHERE k > 1)
		FROM (SELECT count(*) AS k FROM attestations GROUP BY tx_signature) t`).Scan(&singles, &multis)
	testenv.Must(t, err, "transaction sizes")
	if singles == 0 || multis == 0 {
		t.Errorf("%d single-event and %d multi-event transactions, want both", singles, multis)
	}
	// Spread as real traffic: every agent attests, a few carry most of it,
	// the newest rows come from several agents, and the pace grows.
	var agentsWithRows, top3, bottomHalf, newestMax, firstThird, lastThird int
	err = pool.QueryRow(ctx, `WITH per AS (SELECT agent_pda, count(*) AS n, row_number() OVER (ORDER BY count(*) DESC) AS r
			FROM attestations GROUP BY agent_pda)
		SELECT count(*), COALESCE(sum(n) FILTER (WHERE r <= 3), 0), COALESCE(sum(n) FILTER (WHERE r > 10), 0) FROM per`).Scan(&agentsWithRows, &top3, &bottomHalf)
	testenv.Must(t, err, "agent shares")
	err = pool.QueryRow(ctx, `SELECT max(n) FROM (SELECT count(*) AS n FROM
			(SELECT agent_pda FROM attestations ORDER BY ts DESC, slot DESC, pda DESC LIMIT 100) x GROUP BY agent_pda) y`).Scan(&newestMax)
	testenv.Must(t, err, "newest rows")
	err = pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE ts < $1), count(*) FILTER (WHERE ts >= $2) FROM attestations`,
		now.Add(-60*24*time.Hour), now.Add(-30*24*time.Hour)).Scan(&firstThird, &lastThird)
	testenv.Must(t, err, "pace")
	if agentsWithRows != 20 || top3 < n*2/5 || bottomHalf > n*35/100 || newestMax > 50 || lastThird < firstThird*3/2 {
		t.Errorf("spread: %d agents attest (want 20), top 3 hold %d of %d (want 40%%+), bottom 10 hold %d (want under 35%%), "+
			"one agent has %d of the newest 100 rows (want at most 50), %d in the first 30 days and %d in the last (want 1.5x)",
			agentsWithRows, top3, n, bottomHalf, newestMax, firstThird, lastThird)
	}

	var revoked, withHistory int
	err = pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE revoked AND revoked_at IS NOT NULL),
		count(*) FILTER (WHERE policy_root <> initial_policy_root) FROM agents`).Scan(&revoked, &withHistory)
	testenv.Must(t, err, "agents")
	if revoked != 2 || withHistory == 0 {
		t.Errorf("%d revoked agents (want 2 of 20), %d with a policy update (want some)", revoked, withHistory)
	}

	// Every signature verifies with the agent's key over the stored hash,
	// every pda is derived from its event, and the key is the agent's.
	keys := map[string]ed25519.PublicKey{}
	for _, a := range res.Agents {
		keys[a.PDA.String()] = a.Key.Public().(ed25519.PublicKey)
	}
	program := solana.MustPublicKeyFromBase58(attestation.DefaultProgramID)
	rows, err := pool.Query(ctx, `SELECT pda, agent_pda, agent_id, action_hash, agent_signature, tx_signature, event_index FROM attestations`)
	testenv.Must(t, err, "rows")
	checked := 0
	for rows.Next() {
		var pda, agent, tx string
		var id, hash, sig []byte
		var event int
		testenv.Must(t, rows.Scan(&pda, &agent, &id, &hash, &sig, &tx, &event), "scan")
		if !ed25519.PublicKey(id).Equal(keys[agent]) {
			t.Fatalf("%s: agent_id is not the key of agent %s", pda, agent)
		}
		if !ed25519.Verify(ed25519.PublicKey(id), hash, sig) {
			t.Fatalf("%s: signature does not verify", pda)
		}
		want, err := attestation.DerivePDA(program, solana.MustSignatureFromBase58(tx), event)
		testenv.Must(t, err, "derive")
		if want.String() != pda {
			t.Fatalf("pda %s, derived %s", pda, want)
		}
		checked++
	}
	testenv.Must(t, rows.Err(), "rows")
	if checked != 3000 {
		t.Fatalf("checked %d rows", checked)
	}

	// Every event the run wrote lies at or below LastSlot: a chain
	// simulated beside the data starts after it.
	var maxSlot int64
	testenv.Must(t, pool.QueryRow(ctx, `SELECT GREATEST((SELECT max(slot) FROM attestations), (SELECT max(slot) FROM agent_events))`).
		Scan(&maxSlot), "newest slot")
	if res.LastSlot == 0 || uint64(maxSlot) != res.LastSlot {
		t.Errorf("LastSlot %d, the newest event stored is at slot %d", res.LastSlot, maxSlot)
	}

	// Same seed again: the same events, so nothing new.
	again, err := Run(ctx, st, opt)
	testenv.Must(t, err, "seed again")
	for i := range again.Agents {
		if again.Agents[i].PDA != res.Agents[i].PDA {
			t.Fatalf("agent %d differs between runs with the same seed", i)
		}
	}
	testenv.Must(t, pool.QueryRow(ctx, `SELECT count(*) FROM attestations`).Scan(&n), "count")
	if n != 3000 {
		t.Fatalf("%d attestations after seeding twice with the same seed, want 3000", n)
	}
}

func TestOptionsRejected(t *testing.T) {
	t.Parallel()
	for _, opt := range []Options{{Agents: 0, Attestations: 10}, {Agents: 1, Attestations: -1}} {
		if _, err := Run(context.Background(), nil, opt); err == nil {
			t.Errorf("%+v: want an error", opt)
		}
	}
}
