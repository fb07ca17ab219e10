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
	"strings"
	"time"
)

// runHealthcheck asks a node's /api/v1/health (an index or worker
// process's /health with -role, or any URL) once and succeeds only on a
// 200, within a deadline. It is the container image's HEALTHCHECK: a FROM
// scratch image has no curl.
func runHealthcheck(ctx context.Context, args []string) error {
	fs := newFlags("healthcheck")
	role := fs.String("role", "serve", "the process asked: serve (/api/v1/health), index or worker (/health on their internal listener)")
	addr := fs.String("addr", "", "its listener, host:port (default: ATTESTD_HTTP_ADDR, ATTESTD_INDEXER_METRICS_ADDR or ATTESTD_WORKER_METRICS_ADDR by -role; a wildcard host is asked on 127.0.0.1)")
	target := fs.String("url", "", "the URL to GET instead (any 200 is healthy)")
	timeout := fs.Duration("timeout", 3*time.Second, "deadline of the whole check")
	quiet := fs.Bool("q", false, "print nothing on success")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	u, err := roleHealthURL(*role, *target, *addr, os.Getenv)
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

// roleHealthURL is the URL the check asks for a role: serve asks
// /api/v1/health on the API listener; index and worker ask /health on
// their internal listener (ATTESTD_INDEXER_METRICS_ADDR,
// ATTESTD_WORKER_METRICS_ADDR, defaults 127.0.0.1:9091 and :9092).
func roleHealthURL(role, target, addr string, getenv func(string) string) (string, error) {
	switch role {
	case "serve", "":
		return healthURL(target, addr, getenv("ATTESTD_HTTP_ADDR"))
	case "index":
		return internalURL(target, addr, getenv, "ATTESTD_INDEXER_METRICS_ADDR", "127.0.0.1:9091")
	case "worker":
		return internalURL(target, addr, getenv, "ATTESTD_WORKER_METRICS_ADDR", "127.0.0.1:9092")
	}
	return "", fmt.Errorf("-role %q: want serve, index or worker", role)
}

// internalURL is target when given, else /health on an internal
// listener: addr, else the variable env names (def when unset or empty).
func internalURL(target, addr string, getenv func(string) string, env, def string) (string, error) {
	if target != "" {
		return healthURL(target, "", "")
	}
	if addr == "" {
		addr = getenv(env)
	}
	if addr == "" {
		addr = def
	}
	u, err := healthURL("", addr, "")
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(u, "/api/v1/health") + "/health", nil
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
