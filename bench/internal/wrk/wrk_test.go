package wrk

import "testing"

func TestParse(t *testing.T) {
	const ok = `Running 8s test @ http://127.0.0.1:18080/
  Latency Distribution
     50%    1.16ms
     75%    2.00ms
     90%    3.10ms
     99%   57.70ms
  297960 requests in 8.00s, 40.12MB read
Requests/sec:  37245.12
`
	for _, tc := range []struct {
		name, out string
		want      Figures
	}{
		{"clean run", ok, Figures{RPS: 37245.12, P50: "1.16ms", P99: "57.70ms"}},
		{"non-2xx", ok + "  Non-2xx or 3xx responses: 12\n", Figures{RPS: 37245.12, P50: "1.16ms", P99: "57.70ms", Non2xx: true}},
		{"socket errors", "  Socket errors: connect 0, read 3, write 0, timeout 0\n" + ok, Figures{RPS: 37245.12, P50: "1.16ms", P99: "57.70ms", SocketErrors: true}},
		{"no output", "", Figures{}},
	} {
		if got := Parse(tc.out); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
