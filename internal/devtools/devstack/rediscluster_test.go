package devstack

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestStartRedisCluster(t *testing.T) {
	dir, err := os.MkdirTemp("", "attestd-devstack-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := StartRedisCluster(ctx, dir, 3)
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(c.Stop)

	opt, err := redis.ParseClusterURL(c.URL)
	if err != nil {
		t.Fatalf("parse %s: %v", c.URL, err)
	}
	if len(opt.Addrs) != 3 {
		t.Fatalf("cluster URL %s names %d nodes, want 3", c.URL, len(opt.Addrs))
	}
	rdb := redis.NewClusterClient(opt)
	defer rdb.Close()
	// MasterOf agrees with the cluster at every boundary.
	for _, slot := range []int{0, 5460, 5461, 10921, 10922, 16383} {
		want := c.MasterOf(slot).Addr
		shards, err := rdb.ClusterShards(ctx).Result()
		if err != nil {
			t.Fatalf("cluster shards: %v", err)
		}
		got := ""
		for _, sh := range shards {
			for _, r := range sh.Slots {
				if int64(slot) >= r.Start && int64(slot) <= r.End {
					got = fmt.Sprintf("%s:%d", sh.Nodes[0].IP, sh.Nodes[0].Port)
				}
			}
		}
		if got != want {
			t.Errorf("slot %d: cluster says %s, MasterOf %s", slot, got, want)
		}
	}
	// Keys spread over the slots land on every master.
	for i := range 300 {
		if err := rdb.Set(ctx, "k"+string(rune('a'+i%26))+string(rune('a'+i/26)), i, 0).Err(); err != nil {
			t.Fatalf("set: %v", err)
		}
	}
	for _, n := range c.Nodes {
		one := redis.NewClient(&redis.Options{Addr: n.Addr})
		size, err := one.DBSize(ctx).Result()
		one.Close()
		if err != nil {
			t.Fatalf("dbsize on %s: %v", n.Addr, err)
		}
		if size == 0 {
			t.Errorf("master %s holds no key: slots are not spread", n.Addr)
		}
	}
}
