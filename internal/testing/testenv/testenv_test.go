package testenv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { Main(m) }

func TestDatabaseAndRedisAreReal(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, Database(t))
	Must(t, err, "connect")
	defer conn.Close(ctx)
	var n int
	Must(t, conn.QueryRow(ctx, "SELECT 40 + 2").Scan(&n), "query")
	if n != 42 {
		t.Fatalf("got %d", n)
	}
	url, prefix := Redis(t)
	opt, err := redis.ParseURL(url)
	Must(t, err, "parse")
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	Must(t, rdb.Set(ctx, prefix+"k", "v", 0).Err(), "set")
	if v := rdb.Get(ctx, prefix+"k").Val(); v != "v" {
		t.Fatalf("got %q", v)
	}
}

func TestOwnRedisCanBeKilled(t *testing.T) {
	r := OwnRedis(t)
	opt, _ := redis.ParseURL(r.URL)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	Must(t, rdb.Ping(context.Background()).Err(), "ping")
	r.Kill()
	if err := rdb.Ping(context.Background()).Err(); err == nil {
		t.Fatal("ping succeeded after kill")
	}
}

func TestReplaceDB(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://u@h:1/postgres?sslmode=disable", "postgres://u@h:1/x?sslmode=disable"},
		{"postgres://u@h:1/postgres", "postgres://u@h:1/x"},
		{"postgres://u@h:1", "postgres://u@h:1/x"},
	} {
		if got := replaceDB(tc.in, "x"); got != tc.want {
			t.Errorf("replaceDB(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestSharedServerStartsOnce: tests that ask for a shared server at the
// same time get one server, started once; a server named by the
// environment is used without starting one; a failed start fails every
// test that asks, without a second try.
func TestSharedServerStartsOnce(t *testing.T) {
	const env = "ATTESTD_TEST_SHARED_UNDER_TEST"
	for _, tc := range []struct {
		name    string
		env     string // the variable's value ("" unset)
		fail    bool   // the start fails
		want    string // the URL every caller gets
		starts  int32
		failure string // what every caller's test is told
	}{
		{name: "started once for every caller", want: "started://1", starts: 1},
		{name: "named by the environment", env: "named://x", want: "named://x", starts: 0},
		{name: "a failed start fails every caller", fail: true, starts: 1, failure: "start thing: no server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(env, tc.env)
			var starts atomic.Int32
			get := shared("thing", env, "attestd-test-shared-", func(dir string) (string, func(), error) {
				n := starts.Add(1)
				time.Sleep(50 * time.Millisecond) // the window two callers used to share
				if tc.fail {
					return "", nil, errors.New("no server")
				}
				return fmt.Sprintf("started://%d", n), func() {}, nil
			})
			const callers = 8
			urls := make([]string, callers)
			recs := make([]*fatalRecorder, callers)
			var wg sync.WaitGroup
			for i := range callers {
				recs[i] = &fatalRecorder{TB: t}
				wg.Add(1)
				go func() {
					defer wg.Done()
					urls[i] = get(recs[i])
				}()
			}
			wg.Wait()
			if n := starts.Load(); n != tc.starts {
				t.Errorf("%d starts, want %d", n, tc.starts)
			}
			for i := range callers {
				if urls[i] != tc.want || recs[i].msg != tc.failure {
					t.Errorf("caller %d: URL %q and failure %q, want %q and %q", i, urls[i], recs[i].msg, tc.want, tc.failure)
				}
			}
		})
	}
}

func TestMetricSum(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "things_total"}, []string{"kind", "outcome"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "level"})
	reg.MustRegister(c, g)
	c.WithLabelValues("a", "ok").Add(2)
	c.WithLabelValues("a", "bad").Add(3)
	c.WithLabelValues("b", "ok").Add(5)
	g.Set(7)
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"things_total", nil, 10},
		{"things_total", []string{"kind", "a"}, 5},
		{"things_total", []string{"kind", "a", "outcome", "ok"}, 2},
		{"things_total", []string{"kind", "c"}, 0},
		{"level", nil, 7},
		{"missing", nil, 0},
	} {
		if got := MetricSum(t, reg, tc.name, tc.labels...); got != tc.want {
			t.Errorf("%s %v: %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}
