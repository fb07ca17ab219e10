package node

import (
	"net"
	"strings"
	"testing"
)

// TestBindHTTPNamesTheVariable: a taken address fails naming
// ATTESTD_HTTP_ADDR and another address on the same host to pick; a free
// one is bound and served from.
func TestBindHTTPNamesTheVariable(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		addr string
		want string // "" when the address binds
	}{
		{taken.Addr().String(), "ATTESTD_HTTP_ADDR=127.0.0.1:8081 make run"},
		{"127.0.0.1:0", ""},
		{"127.0.0.1:notaport", "ATTESTD_HTTP_ADDR names"},
	} {
		ln, err := BindHTTP(tc.addr, false)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.addr, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error saying %q", tc.addr, err, tc.want)
		}
		if ln != nil {
			ln.Close()
		}
	}
}
