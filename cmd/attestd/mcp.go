package main

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/mcp"
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
	common, err := config.FromEnv(nil)
	if err != nil {
		return err
	}
	log := newLogger(common.LogLevel) // JSON on stderr
	cfg, err := mcp.ConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
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
