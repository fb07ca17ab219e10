package devstack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// RedisCluster is a running throwaway Redis Cluster of masters only, each
// owning an equal share of the hash slots.
type RedisCluster struct {
	Nodes []*Redis
	// BusPorts are the nodes' cluster bus ports, in Nodes order.
	BusPorts []int
	// URL names every node: the first as host, the others as addr
	// parameters (the form redis.ParseClusterURL reads).
	URL string
}

// slotRange is the range of hash slots master i of n owns: equal shares
// in order, the last taking the remainder.
func slotRange(i, n int) (first, last int) {
	per := clusterSlots / n
	first, last = i*per, (i+1)*per-1
	if i == n-1 {
		last = clusterSlots - 1
	}
	return first, last
}

// MasterOf returns the node that owns a hash slot (0..16383).
func (c *RedisCluster) MasterOf(slot int) *Redis {
	for i, n := range c.Nodes {
		if _, last := slotRange(i, len(c.Nodes)); slot <= last {
			return n
		}
	}
	return nil
}

// Stop shuts every node down.
func (c *RedisCluster) Stop() {
	for _, n := range c.Nodes {
		n.Stop()
	}
}

// StartRedisCluster starts masters redis-server processes in cluster mode
// on free loopback ports (each under its own directory in dir), splits the
// hash slots between them, joins them and waits until every node reports
// the cluster healthy.
func StartRedisCluster(ctx context.Context, dir string, masters int) (*RedisCluster, error) {
	if masters < 1 {
		return nil, errors.New("redis cluster: at least one master")
	}
	c := &RedisCluster{}
	fail := func(err error) (*RedisCluster, error) {
		c.Stop()
		return nil, err
	}
	for i := range masters {
		n, bus, err := startClusterNode(ctx, filepath.Join(dir, "node"+strconv.Itoa(i)))
		if err != nil {
			return fail(fmt.Errorf("redis cluster node %d: %w", i, err))
		}
		c.Nodes = append(c.Nodes, n)
		c.BusPorts = append(c.BusPorts, bus)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.form(wctx); err != nil {
		return fail(fmt.Errorf("form redis cluster: %w", err))
	}
	c.URL = "redis://" + c.Nodes[0].Addr
	for i, n := range c.Nodes[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		c.URL += sep + "addr=" + n.Addr
	}
	return c, nil
}

// form assigns slot ranges, introduces the nodes to the first one and
// waits for every node to see all slots served.
func (c *RedisCluster) form(ctx context.Context) error {
	clients := make([]*redis.Client, len(c.Nodes))
	for i, n := range c.Nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Addr, DialTimeout: time.Second, MaxRetries: -1})
		defer clients[i].Close()
	}
	for i, rdb := range clients {
		first, last := slotRange(i, len(clients))
		if err := rdb.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", first, last).Err(); err != nil {
			return fmt.Errorf("assign slots %d-%d to %s: %w", first, last, c.Nodes[i].Addr, err)
		}
	}
	for i, n := range c.Nodes[1:] {
		host, port, err := splitHostPort(n.Addr)
		if err != nil {
			return err
		}
		if err := clients[0].Do(ctx, "CLUSTER", "MEET", host, port, c.BusPorts[i+1]).Err(); err != nil {
			return fmt.Errorf("meet %s: %w", n.Addr, err)
		}
	}
	for i, rdb := range clients {
		for {
			info, nodes, err := c.nodeState(ctx, rdb)
			if err == nil && ready(info, nodes, len(c.Nodes)) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("node %s not ready (info %q, nodes %q, err %v): %w", c.Nodes[i].Addr, info, nodes, err, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// nodeState reads a node's CLUSTER INFO and CLUSTER NODES.
func (c *RedisCluster) nodeState(ctx context.Context, rdb *redis.Client) (info, nodes string, err error) {
	if info, err = rdb.ClusterInfo(ctx).Result(); err != nil {
		return "", "", err
	}
	nodes, err = rdb.ClusterNodes(ctx).Result()
	return info, nodes, err
}

// ready tells a node that serves every slot, knows all n nodes and has a
// connected link to each: pub/sub messages travel those links and are
// dropped, not queued, while one is still in its handshake.
func ready(info, nodes string, n int) bool {
	if !strings.Contains(info, "cluster_state:ok\r\n") || !strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(n)+"\r\n") {
		return false
	}
	lines := strings.Split(strings.TrimSpace(nodes), "\n")
	if len(lines) != n {
		return false
	}
	for _, line := range lines {
		// <id> <addr> <flags> <master> <ping> <pong> <epoch> <link-state> <slots...>
		f := strings.Fields(line)
		if len(f) < 8 || f[7] != "connected" || strings.Contains(f[2], "handshake") || strings.Contains(f[2], "noaddr") {
			return false
		}
	}
	return true
}

// startClusterNode starts one cluster-enabled redis-server on free ports.
// A port found free may be taken by another process before the server
// binds it (its listener is closed in between): then the server exits,
// and it is started again on other ports, up to three times.
func startClusterNode(ctx context.Context, dir string) (*Redis, int, error) {
	var last error
	for range 3 {
		// The cluster bus port is set explicitly: the default (port+10000)
		// may be out of range or taken for a port picked at random.
		bus, err := FreePort()
		if err != nil {
			return nil, 0, err
		}
		n, err := startRedis(ctx, dir, 0,
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(bus), "--cluster-node-timeout", "5000")
		if err == nil {
			return n, bus, nil
		}
		last = err
		_ = os.Remove(filepath.Join(dir, "nodes.conf"))
	}
	return nil, 0, last
}
