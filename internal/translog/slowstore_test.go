package translog_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/prometheus/client_golang/prometheus"
)

// TestSlowStoreShrinksAppends: a PostgreSQL slower than an append's
// deadline (a trigger sleeping 8 ms a leaf, against a deadline of 1 s and
// 1 ms a leaf) times out the appender's first append of 600 leaves; it
// tries smaller appends until they pass, and the log takes every leaf. At
// the same size every try would time out again, forever.
func TestSlowStoreShrinksAppends(t *testing.T) {
	le := newLogEnv(t, 2)
	le.bulk(t, 600, attestation.Finalized)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := le.st.Pool().Exec(ctx, `
		CREATE FUNCTION slow_leaves() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_sleep((SELECT count(*) FROM new_rows) * 0.008); RETURN NULL; END $$;
		CREATE TRIGGER slow_leaves AFTER INSERT ON log_leaves
			REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION slow_leaves();`)
	testenv.Must(t, err, "slow trigger")
	slow, err := store.Open(ctx, le.env.DatabaseURL, store.Options{QueryTimeout: time.Second})
	testenv.Must(t, err, "open store")
	t.Cleanup(slow.Close)
	onSlow := *le
	onSlow.st = slow
	cfg := le.cfg
	cfg.Batch = 600
	logs := &syncBuffer{}
	runAppender(t, &onSlow, cfg, logs, prometheus.NewRegistry())
	testenv.WaitForState(t, "every leaf appended", time.Minute, testenv.Every(100*time.Millisecond, func() (bool, string) {
		n := le.count(t, "SELECT count(*) FROM log_leaves")
		return n == 600, fmt.Sprintf("%d leaves", n)
	}))
	if !strings.Contains(logs.String(), "trying smaller appends") {
		t.Errorf("no line said the appends shrink:\n%s", logs)
	}
}
