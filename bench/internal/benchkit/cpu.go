package benchkit

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/redis/go-redis/v9"
)

// ProcessCPU is process pid's user and system CPU time so far, from
// /proc/PID/stat (clock ticks of 10 ms: runs of seconds keep it exact to
// a few per cent); 0 when unknown.
func ProcessCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The fields after the command name (which may hold spaces) in "(...)".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond // USER_HZ = 100
}

// RedisCPU is the CPU time the Redis server behind rdb used so far (see
// testenv.RedisCPU); 0 when it does not say.
func RedisCPU(ctx context.Context, rdb *redis.Client) time.Duration {
	d, _ := testenv.RedisCPU(ctx, rdb)
	return d
}
