package indexer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSlowStoreShrinksBatches: a PostgreSQL slower than the deadline of a
// batch (a trigger sleeping 8 ms a row, against a deadline of 1 s and
// 1 ms a row) times out the first batch of 600 attestations; the indexer
// halves its batches until they apply, and the store holds the chain
// exactly. At the same size every retry would time out again, forever.
func TestSlowStoreShrinksBatches(t *testing.T) {
	c := startChain(t, devnet.Config{})
	gen(t, c, 2, 600, 50)
	st := newStoreWith(t, store.Options{QueryTimeout: time.Second})
	_, err := st.Pool().Exec(context.Background(), `
		CREATE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_sleep((SELECT count(*) FROM new_rows) * 0.008); RETURN NULL; END $$;
		CREATE TRIGGER slow_insert AFTER INSERT ON attestations
			REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION slow_insert();`)
	testenv.Must(t, err, "slow trigger")
	logs := &testenv.Output{}
	r := startIndexer(t, st, c, func(cfg *Config) { cfg.Logger = logger(logs) })
	waitExact(t, st, c, 60*time.Second)
	if n := testutil.ToFloat64(r.ix.m.batchRecords); n >= 5000 || n < 1 {
		t.Errorf("batch records %v after timeouts, want fewer than 5000", n)
	}
	if !strings.Contains(logs.String(), "retrying with smaller batches") {
		t.Errorf("no line said the batches shrink:\n%s", logs)
	}
	t.Logf("600 attestations stored through a slow PostgreSQL; batches of %v records", testutil.ToFloat64(r.ix.m.batchRecords))
}
