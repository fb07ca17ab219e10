package egress

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// receiver counts the requests that reach it.
func receiver(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func post(c *Client, url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("{}"))
	res, err := c.HTTP.Do(req)
	if err == nil {
		res.Body.Close()
	}
	return err
}

// TestDialTimeRefusesLoopbackInEveryForm sends to a live receiver on
// 127.0.0.1 through every spelling of its address: none may reach it
// without AllowLoopback, and the plain one does with it.
func TestDialTimeRefusesLoopbackInEveryForm(t *testing.T) {
	srv, hits := receiver(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	srv6 := httptest.NewUnstartedServer(srv.Config.Handler)
	ln6, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Fatalf("listen on [::1]: %v", err)
	}
	srv6.Listener = ln6
	srv6.Start()
	t.Cleanup(srv6.Close)
	_, port6, _ := net.SplitHostPort(strings.TrimPrefix(srv6.URL, "http://"))

	guarded := NewClient(Options{Timeout: 3 * time.Second})
	for _, host := range []string{
		"127.0.0.1:" + port, "localhost:" + port, "[::ffff:127.0.0.1]:" + port, "[::ffff:7f00:1]:" + port,
		"2130706433:" + port, "0177.0.0.1:" + port, "0x7f.1:" + port, "127.1:" + port, "[::1]:" + port6,
	} {
		err := post(guarded, "http://"+host+"/hook")
		if err == nil {
			t.Errorf("%s: request went through", host)
		}
		// Names the system cannot resolve (a decimal or octal "IP" for
		// the pure Go resolver) fail before dialing; everything that
		// resolved was refused by the guard.
		if err != nil && !errors.Is(err, ErrBlocked) && !strings.Contains(err.Error(), "no such host") {
			t.Errorf("%s: %v, want a refusal by the guard or no resolution", host, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d requests reached the loopback receiver", n)
	}
	dev := NewClient(Options{Policy: Policy{AllowLoopback: true}, Timeout: 3 * time.Second})
	for _, u := range []string{srv.URL, "http://localhost:" + port, srv6.URL} {
		if err := post(dev, u+"/hook"); err != nil {
			t.Errorf("with loopback allowed, %s: %v", u, err)
		}
	}
	if n := hits.Load(); n != 3 {
		t.Fatalf("with loopback allowed: %d requests arrived, want 3", n)
	}
}

func TestNoRedirectsNoProxy(t *testing.T) {
	var followed atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { followed.Add(1) }))
	defer target.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	t.Setenv("HTTP_PROXY", "http://192.0.2.1:3128")
	t.Setenv("http_proxy", "http://192.0.2.1:3128")
	c := NewClient(Options{Policy: Policy{AllowLoopback: true}, Timeout: 3 * time.Second})
	req, _ := http.NewRequest(http.MethodPost, redirect.URL, strings.NewReader("{}"))
	res, err := c.HTTP.Do(req)
	if err != nil {
		t.Fatalf("post (a proxy from the environment would have failed): %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusTemporaryRedirect || followed.Load() != 0 {
		t.Fatalf("status %d, followed %d: a redirect must be the answer", res.StatusCode, followed.Load())
	}
}

// fakeDNS answers A queries for every name with the next address of
// answers (the last one repeats), and AAAA queries with nothing: a DNS
// server that rebinds a name from a public address to loopback.
func fakeDNS(t *testing.T, answers ...[4]byte) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	var n atomic.Int64
	go func() {
		buf := make([]byte, 512)
		for {
			m, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := buf[:m]
			if len(q) < 12 {
				continue
			}
			// Question: the name's labels, then type and class.
			i := 12
			for i < len(q) && q[i] != 0 {
				i += int(q[i]) + 1
			}
			if i+5 > len(q) {
				continue
			}
			qtype := binary.BigEndian.Uint16(q[i+1:])
			question := q[12 : i+5]
			resp := make([]byte, 12, 64+len(question))
			copy(resp, q[:2])                            // id
			binary.BigEndian.PutUint16(resp[2:], 0x8180) // response, recursion available, no error
			binary.BigEndian.PutUint16(resp[4:], 1)
			resp = append(resp, question...)
			if qtype == 1 { // A
				k := min(int(n.Add(1))-1, len(answers)-1)
				binary.BigEndian.PutUint16(resp[6:], 1)
				resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4)
				resp = append(resp, answers[k][:]...)
			}
			_, _ = pc.WriteTo(resp, from)
		}
	}()
	return pc.LocalAddr().String()
}

// TestDNSRebindingIsRefusedAtDial: the name resolves to a public address
// when the URL is checked, then to loopback when the delivery dials. The
// check at creation passes; the dial is refused; the receiver sees nothing.
func TestDNSRebindingIsRefusedAtDial(t *testing.T) {
	srv, hits := receiver(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	dns := fakeDNS(t, [4]byte{93, 184, 216, 34}, [4]byte{127, 0, 0, 1})
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", dns)
	}}
	p := Policy{}
	u, err := p.CheckURL("https://rebind.attestd.test:" + port + "/hook")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckHost(context.Background(), resolver, u, 2*time.Second); err != nil {
		t.Fatalf("first resolution (public) refused: %v", err)
	}
	c := NewClient(Options{Policy: p, Resolver: resolver, Timeout: 3 * time.Second})
	err = post(c, "http://rebind.attestd.test:"+port+"/hook")
	var be *BlockedError
	if !errors.As(err, &be) || be.Addr.String() != "127.0.0.1" {
		t.Fatalf("rebound dial: %v, want a refusal of 127.0.0.1", err)
	}
	if hits.Load() != 0 {
		t.Fatal("the rebound request reached the loopback receiver")
	}
}
