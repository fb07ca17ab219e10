package main

import (
	"context"
	"fmt"
	"net"

	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/settings"
)

// runMCP serves the MCP tools. stdout is the protocol channel in stdio mode,
// so everything else goes to stderr.
func runMCP(ctx context.Context, args []string) error {
	fs := newFlags("mcp")
	httpAddr := fs.String("http", "", "serve stateless streamable HTTP on this address instead of stdio (a bare :port binds 127.0.0.1)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("mcp: unexpected arguments %q", fs.Args())
	}
	s, log, err := loadSettings(settings.MCP, nil) // logs: JSON on stderr
	if err != nil {
		return err
	}
	cfg := s.MCP
	cfg.Logger = log
	srv, err := mcp.New(cfg)
	if err != nil {
		return err
	}
	if *httpAddr == "" {
		return srv.ServeStdio(ctx)
	}
	addr, err := mcp.ListenAddr(*httpAddr)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	return srv.ServeHTTP(ctx, ln)
}
