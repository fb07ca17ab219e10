// Package wrk reads the figures benchmarks take from the output of the
// wrk load generator (run with --latency).
package wrk

import (
	"regexp"
	"strconv"
	"strings"
)

// Figures are one wrk run's throughput, latency percentiles (as wrk
// prints them, e.g. "1.16ms") and whether any answer was not 2xx/3xx or
// any socket failed.
type Figures struct {
	RPS          float64
	P50, P99     string
	Non2xx       bool
	SocketErrors bool
}

var (
	reRPS     = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	reLatency = regexp.MustCompile(`(?m)^\s+(50|99)%\s+(\S+)`)
)

// Parse reads Figures from wrk's output; what is missing stays zero.
func Parse(out string) Figures {
	var f Figures
	if m := reRPS.FindStringSubmatch(out); m != nil {
		f.RPS, _ = strconv.ParseFloat(m[1], 64)
	}
	for _, m := range reLatency.FindAllStringSubmatch(out, -1) {
		if m[1] == "50" {
			f.P50 = m[2]
		} else {
			f.P99 = m[2]
		}
	}
	f.Non2xx = strings.Contains(out, "Non-2xx or 3xx responses")
	f.SocketErrors = strings.Contains(out, "Socket errors")
	return f
}
