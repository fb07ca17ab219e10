package node

import (
	"fmt"
	"net"

	"github.com/attestd/attestd/app"
)

// BindHTTP binds the API's address (SO_REUSEPORT with reusePort), or says
// which variable names it and how to pick another.
func BindHTTP(addr string, reusePort bool) (net.Listener, error) {
	ln, err := app.Bind(addr, reusePort)
	if err != nil {
		host, _, _ := net.SplitHostPort(addr)
		if host == "" {
			host = "127.0.0.1"
		}
		return nil, fmt.Errorf("cannot listen on %s, the address ATTESTD_HTTP_ADDR names: %w; stop what listens there, or pick another "+
			"address, such as ATTESTD_HTTP_ADDR=%s make run", addr, err, net.JoinHostPort(host, "8081"))
	}
	return ln, nil
}
