package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/redis/go-redis/v9"
)

// TestRedisClusterFleet runs the fleet contract on a real three-master
// Redis Cluster: three limiters, each with its own cluster client, decide
// concurrently for clients whose keys live on every master. Each client
// gets exactly Limit of 150 requests, every decision is made in Redis (none
// by the local fallback), and each key's sorted set holds Limit members on
// the master that owns its slot.
func TestRedisClusterFleet(t *testing.T) {
	cl := testenv.OwnRedisCluster(t, 3)
	newClient := func() *redis.ClusterClient {
		opt, err := redis.ParseClusterURL(cl.URL)
		testenv.Must(t, err, "parse cluster url")
		opt.DialTimeout = time.Second
		rdb := redis.NewClusterClient(opt)
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
	const limit, perClient = 100, 150
	prefix := testenv.Name("t") + ":"
	cfg := Config{Limit: limit, Window: time.Minute, KeyPrefix: prefix}
	nodes := []*node{newNodeOn(t, newClient(), cfg), newNodeOn(t, newClient(), cfg), newNodeOn(t, newClient(), cfg)}
	for i, n := range nodes {
		if n.lim.multiKey.Load() {
			t.Fatalf("node %d: a cluster client must get single-key scripts", i)
		}
	}

	// Two clients per master, picked by the slot of their key.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := newClient()
	owner := map[string]string{} // client -> master address
	perMaster := map[string]int{}
	for i := 1; len(owner) < 2*len(cl.Nodes) && i < 255; i++ {
		ip := fmt.Sprintf("198.51.100.%d", i)
		slot, err := admin.ClusterKeySlot(ctx, prefix+ip).Result()
		testenv.Must(t, err, "key slot")
		m := cl.MasterOf(int(slot)).Addr
		if perMaster[m] < 2 {
			perMaster[m]++
			owner[ip] = m
		}
	}
	if len(owner) != 2*len(cl.Nodes) {
		t.Fatalf("found clients for %d masters only: %v", len(perMaster), perMaster)
	}

	var (
		mu       sync.Mutex
		accepted = map[string]int{}
		wg       sync.WaitGroup
		errs     = make(chan error, 1)
	)
	for ip := range owner {
		for g := range 3 { // three concurrent callers per client, one per node
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range perClient / 3 {
					d, err := nodes[g].lim.Allow(ctx, ip)
					if err == nil && d.Local {
						err = fmt.Errorf("client %s: decided by the local fallback on a healthy cluster", ip)
					}
					if err != nil {
						select {
						case errs <- err:
						default:
						}
						return
					}
					if d.Allowed {
						mu.Lock()
						accepted[ip]++
						mu.Unlock()
					}
				}
			}()
		}
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	for ip, m := range owner {
		if accepted[ip] != limit {
			t.Errorf("client %s (key on %s): accepted %d of %d, want exactly %d", ip, m, accepted[ip], perClient, limit)
		}
		one := redis.NewClient(&redis.Options{Addr: m})
		n, err := one.ZCard(ctx, prefix+ip).Result()
		one.Close()
		testenv.Must(t, err, "zcard on %s", m)
		if n != limit {
			t.Errorf("client %s: master %s holds %d members, want %d", ip, m, n, limit)
		}
	}
	for i, n := range nodes {
		if n.lim.Degraded() {
			t.Errorf("node %d degraded on a healthy cluster; logs:\n%s", i, n.logs)
		}
	}
}
