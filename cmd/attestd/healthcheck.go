package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"
)

// runHealthcheck asks a node's /api/v1/health (or any URL) once and
// succeeds only on a 200, within a deadline. It is the container image's
// HEALTHCHECK: a FROM scratch image has no curl.
func runHealthcheck(ctx context.Context, args []string) error {
	fs := newFlags("healthcheck")
	addr := fs.String("addr", "", "the node's listener, host:port (default: ATTESTD_HTTP_ADDR, a wildcard host asked on 127.0.0.1)")
	target := fs.String("url", "", "the URL to GET instead (any 200 is healthy), such as an indexer's http://127.0.0.1:9091/metrics")
	timeout := fs.Duration("timeout", 3*time.Second, "deadline of the whole check")
	quiet := fs.Bool("q", false, "print nothing on success")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	u, err := healthURL(*target, *addr, os.Getenv("ATTESTD_HTTP_ADDR"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("health request: %w", err)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, // ask the node itself, never a proxy
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, body)
	}
	if !*quiet {
		fmt.Printf("%s\n", body)
	}
	return nil
}

// healthURL is the URL the check asks: target when given, else /api/v1/health
// on addr (or the listener env names), with a wildcard or empty host asked
// on loopback.
func healthURL(target, addr, envAddr string) (string, error) {
	if target != "" {
		u, err := url.Parse(target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", fmt.Errorf("-url %q: want an http:// or https:// URL", target)
		}
		return target, nil
	}
	if addr == "" {
		addr = envAddr
	}
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("listener %q: %w", addr, err)
	}
	if port == "" {
		return "", errors.New("listener " + addr + ": no port")
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/api/v1/health", nil
}
