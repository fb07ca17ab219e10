package devstack

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Nginx is a running nginx started from deploy/nginx.conf.
type Nginx struct {
	URL  string // http://127.0.0.1:port
	Addr string
	Dir  string
	proc *process
}

// NginxOptions say which configuration to run and where it proxies.
type NginxOptions struct {
	// Config is the path of the site configuration (deploy/nginx.conf).
	Config string
	// Upstreams are the API nodes, host:port on loopback.
	Upstreams []string
	// Workers is the number of worker processes (default 1).
	Workers int
	// Port is the loopback port to listen on (0: a free one). A caller
	// that must name nginx's origin before it starts (the nodes'
	// ATTESTD_PUBLIC_URL) picks it.
	Port int
}

var (
	nginxOnce sync.Once
	nginxBin  string
	nginxErr  error
)

// FindNginx locates the nginx binary, installing the Debian package nginx
// when it is missing and we are root. The result is memoised.
func FindNginx() (string, error) {
	nginxOnce.Do(func() {
		if nginxBin = firstExisting(pathOf("nginx"), "/usr/sbin/nginx"); nginxBin != "" {
			return
		}
		if os.Geteuid() != 0 {
			nginxErr = fmt.Errorf("nginx not found: install it with `sudo apt-get install nginx`")
			return
		}
		slog.Info("installing nginx with apt-get")
		if nginxErr = aptInstallNoStart("nginx"); nginxErr != nil {
			nginxErr = fmt.Errorf("install nginx: %w", nginxErr)
			return
		}
		if nginxBin = firstExisting(pathOf("nginx"), "/usr/sbin/nginx"); nginxBin == "" {
			nginxErr = fmt.Errorf("nginx not found after installing the package")
		}
	})
	return nginxBin, nginxErr
}

// policyRCD is Debian's hook that tells maintainer scripts whether they
// may start services; exit 101 means no.
const policyRCD = "/usr/sbin/policy-rc.d"

// aptInstallNoStart installs packages without letting their maintainer
// scripts start system services (the nginx package would start one on
// port 80): a policy-rc.d that refuses is put in place for the install
// when the machine has none.
func aptInstallNoStart(pkgs ...string) error {
	if _, err := os.Stat(policyRCD); os.IsNotExist(err) {
		if err := os.WriteFile(policyRCD, []byte("#!/bin/sh\n# no services started while devstack installs packages\nexit 101\n"), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", policyRCD, err)
		}
		defer os.Remove(policyRCD)
	}
	return AptInstall(pkgs...)
}

// StartNginx runs opt.Config on a free loopback port with its working
// files under dir, as the unprivileged user postgres runs as when we are
// root, until Stop.
func StartNginx(ctx context.Context, dir string, opt NginxOptions) (*Nginx, error) {
	bin, err := FindNginx()
	if err != nil {
		return nil, err
	}
	site, err := os.ReadFile(opt.Config)
	if err != nil {
		return nil, fmt.Errorf("read nginx config: %w", err)
	}
	port := opt.Port
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	rendered, err := RenderNginxSite(site, port, filepath.Join(dir, "cache"), opt.Upstreams)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opt.Config, err)
	}
	for _, d := range []string{"cache", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("create nginx dir: %w", err)
		}
	}
	workers := max(opt.Workers, 1)
	main := fmt.Sprintf(`worker_processes %d;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path %[2]s/tmp/body;
    proxy_temp_path %[2]s/tmp/proxy;
    fastcgi_temp_path %[2]s/tmp/fastcgi;
    uwsgi_temp_path %[2]s/tmp/uwsgi;
    scgi_temp_path %[2]s/tmp/scgi;
    include %[2]s/site.conf;
}
`, workers, dir)
	if err := os.WriteFile(filepath.Join(dir, "site.conf"), rendered, 0o644); err != nil {
		return nil, fmt.Errorf("write nginx site: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(main), 0o644); err != nil {
		return nil, fmt.Errorf("write nginx config: %w", err)
	}
	cred, err := unprivileged()
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := chownTree(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", filepath.Join(dir, "error.log"),
		"-g", "daemon off;")
	p, err := startProcess("nginx", cmd, cred, filepath.Join(dir, "nginx.out"))
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	n := &Nginx{URL: "http://" + addr, Addr: addr, Dir: dir, proc: p}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := waitTCP(wctx, p, addr); err != nil {
		n.Stop()
		log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		out, _ := os.ReadFile(filepath.Join(dir, "nginx.out"))
		return nil, fmt.Errorf("%w\n%s%s", err, tail(out), tail(log))
	}
	return n, nil
}

// Stop shuts nginx down gracefully (SIGQUIT), waiting up to 5 s.
func (n *Nginx) Stop() { n.proc.stop(syscall.SIGQUIT, 5*time.Second) }

// ErrorLog returns what nginx logged (for a failing test's message).
func (n *Nginx) ErrorLog() string {
	b, _ := os.ReadFile(filepath.Join(n.Dir, "error.log"))
	return string(b)
}

var (
	reCachePath = regexp.MustCompile(`(?m)^(\s*proxy_cache_path\s+)\S+`)
	reListen    = regexp.MustCompile(`(?m)^(\s*)listen\s+[^;]*;`)
	reUpstream  = regexp.MustCompile(`(?ms)^(upstream\s+\S+\s*\{\n)(.*?)^\}`)
	reServer    = regexp.MustCompile(`(?m)^\s*server\s+[^;]+;\n`)
	reSSL       = regexp.MustCompile(`(?m)^\s*ssl_\w+\s[^\n]*\n`)
)

// RenderNginxSite rewrites the site configuration for a test: the cache
// path becomes cacheDir, the listen line 127.0.0.1:port without TLS, and
// the upstream's servers the given ones. Everything else is kept as
// written. Each rewrite must find exactly what it replaces, so a change of
// the file's shape fails here rather than testing something else.
func RenderNginxSite(site []byte, port int, cacheDir string, upstreams []string) ([]byte, error) {
	if len(upstreams) == 0 {
		return nil, fmt.Errorf("no upstream servers")
	}
	one := func(re *regexp.Regexp, what string, b []byte, repl func([]byte) []byte) ([]byte, error) {
		if n := len(re.FindAllIndex(b, -1)); n != 1 {
			return nil, fmt.Errorf("want exactly one %s, found %d", what, n)
		}
		return re.ReplaceAllFunc(b, repl), nil
	}
	b, err := one(reCachePath, "proxy_cache_path", site, func(m []byte) []byte {
		return reCachePath.ReplaceAll(m, []byte("${1}"+cacheDir))
	})
	if err != nil {
		return nil, err
	}
	if b, err = one(reListen, "listen line", b, func(m []byte) []byte {
		indent := reListen.FindSubmatch(m)[1]
		return []byte(string(indent) + "listen 127.0.0.1:" + strconv.Itoa(port) + ";")
	}); err != nil {
		return nil, err
	}
	if b, err = one(reUpstream, "upstream block", b, func(m []byte) []byte {
		sub := reUpstream.FindSubmatch(m)
		body := sub[2]
		first := reServer.FindIndex(body)
		if first == nil {
			return m
		}
		// The first server's parameters (max_fails=...) apply to each.
		params := ""
		if f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(string(body[first[0]:first[1]])), ";")); len(f) > 2 {
			params = " " + strings.Join(f[2:], " ")
		}
		var servers strings.Builder
		for _, u := range upstreams {
			servers.WriteString("    server " + u + params + ";\n")
		}
		rest := reServer.ReplaceAll(body, nil)
		out := append([]byte{}, sub[1]...)
		out = append(out, rest[:first[0]]...)
		out = append(out, servers.String()...)
		out = append(out, rest[first[0]:]...)
		return append(out, '}')
	}); err != nil {
		return nil, err
	}
	if !bytes.Contains(b, []byte("server "+upstreams[0]+" ")) && !bytes.Contains(b, []byte("server "+upstreams[0]+";")) {
		return nil, fmt.Errorf("the upstream block names no server to replace")
	}
	return reSSL.ReplaceAll(b, nil), nil
}
