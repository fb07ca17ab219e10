package cache

import (
	"context"
	"testing"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/testing/testenv"
)

func startRedisOn(t *testing.T, port int) (*devstack.Redis, error) {
	r, err := devstack.StartRedis(context.Background(), testenv.TempDir(t, "redis-again-"), port)
	if err == nil {
		t.Cleanup(r.Stop)
	}
	return r, err
}
