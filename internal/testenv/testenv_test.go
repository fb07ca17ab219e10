package testenv

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
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
