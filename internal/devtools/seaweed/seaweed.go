// Package seaweed runs a real S3-compatible object store on this machine:
// SeaweedFS (unmodified, the project's Go tool dependency: `go tool weed`)
// as one `weed mini` process holding a master, a volume server, a filer,
// the S3 gateway and mini's admin server (which it always starts), every
// port on 127.0.0.1, its data and log under one directory. Tests start one
// to keep blobs in; the object store it serves is opened with
// gocloud.dev/blob's s3blob (Server.Open, or Server.URL with Server.Env
// for a child process).
//
// weed mini rather than weed server: in single-master mode it skips the
// filer's wait for peers to disprove an empty cluster, and is ready in
// about 5 s where weed server takes about 12. The server is small on
// purpose: volumes of 64 MiB, 8 of them at most (mini grows them one at a
// time), so it holds half a gigabyte of objects.
package seaweed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"
)

// The defaults Start uses for what Options leaves empty: a development
// bucket and key pair (the server listens on loopback only).
const (
	DefaultBucket    = "attestd"
	DefaultAccessKey = "attestd-dev"
	DefaultSecretKey = "attestd-dev-secret"
	// Region is the region clients sign for; SeaweedFS accepts any.
	Region = "us-east-1"
)

// startTimeout bounds the wait until the S3 gateway serves the bucket:
// the master, volume server, filer and gateway start in turn (about 5 s).
const startTimeout = 60 * time.Second

// binaries memoizes Binary's answer per directory for this process: even
// with the build cached, go tool -n takes seconds to find it up to date.
var binaries sync.Map

// Binary builds weed (once; Go caches it) and returns its path:
// `go tool -n weed`, run in dir (any directory of the checkout).
func Binary(ctx context.Context, dir string) (string, error) {
	if bin, ok := binaries.Load(dir); ok {
		return bin.(string), nil
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute) // a first build takes minutes
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "tool", "-n", "weed")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("go tool -n weed: %w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("go tool -n weed: %w", err)
	}
	bin := strings.TrimSpace(string(out))
	binaries.Store(dir, bin)
	return bin, nil
}

// Options say how to start a server.
type Options struct {
	Binary string // weed (Binary)
	Dir    string // its data, configuration and log (weed.log)
	Bucket string // the bucket Start creates; DefaultBucket when empty
	// AccessKey and SecretKey are the one identity the gateway accepts;
	// DefaultAccessKey and DefaultSecretKey when empty.
	AccessKey, SecretKey string
}

// Server is a running SeaweedFS with its S3 gateway.
type Server struct {
	Endpoint  string // the S3 endpoint, http://127.0.0.1:PORT
	Bucket    string
	AccessKey string
	SecretKey string
	Region    string
	Dir       string
	Log       string        // the log file
	cmd       *exec.Cmd     // weed mini
	exited    chan error    // its Wait
	done      chan struct{} // closed when it has exited
	stopOnce  sync.Once
}

// Start starts weed mini in opt.Dir on free loopback ports, waits until
// its S3 gateway answers, and creates the bucket (keeping it when the
// directory holds it from an earlier start).
func Start(ctx context.Context, opt Options) (*Server, error) {
	if opt.Binary == "" || opt.Dir == "" {
		return nil, errors.New("seaweed: Options.Binary and Options.Dir are required")
	}
	s := &Server{Bucket: opt.Bucket, AccessKey: opt.AccessKey, SecretKey: opt.SecretKey, Region: Region,
		Dir: opt.Dir, Log: filepath.Join(opt.Dir, "weed.log")}
	if s.Bucket == "" {
		s.Bucket = DefaultBucket
	}
	if s.AccessKey == "" && s.SecretKey == "" {
		s.AccessKey, s.SecretKey = DefaultAccessKey, DefaultSecretKey
	}
	if s.AccessKey == "" || s.SecretKey == "" {
		return nil, errors.New("seaweed: give both an access key and a secret key, or neither")
	}
	data := filepath.Join(opt.Dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, err
	}
	config := filepath.Join(opt.Dir, "s3.json")
	if err := writeIdentities(config, s.AccessKey, s.SecretKey); err != nil {
		return nil, err
	}
	// The ten ports are free when chosen, but another process may take
	// one before weed binds it: weed then exits at once, and a new set is
	// tried.
	for attempt := 1; ; attempt++ {
		args, s3Port, err := serverArgs(opt.Dir, data, config)
		if err != nil {
			return nil, err
		}
		s.Endpoint = "http://127.0.0.1:" + strconv.Itoa(s3Port)
		if err := s.start(opt.Binary, args); err != nil {
			return nil, err
		}
		err = s.waitReady(ctx)
		if err == nil {
			return s, nil
		}
		if attempt < 3 && errors.Is(err, errPortTaken) {
			continue // weed has exited: nothing to stop
		}
		s.Stop()
		return nil, err
	}
}

// errPortTaken: weed exited at start because one of its ports was taken.
var errPortTaken = errors.New("a port was taken before weed bound it")

// start starts weed, its output appended to the log file.
func (s *Server) start(bin string, args []string) error {
	logf, err := os.OpenFile(s.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	s.cmd = exec.Command(bin, args...)
	s.cmd.Dir = s.Dir // weed reads master.toml, filer.toml and security.toml from "." first
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start weed mini: %w", err)
	}
	s.exited, s.done = make(chan error, 1), make(chan struct{})
	exited, done := s.exited, s.done
	go func() { err := s.cmd.Wait(); close(done); exited <- err; close(exited) }()
	return nil
}

// serverArgs is weed's command line: weed mini (master, volume server,
// filer, S3 gateway, and the admin server with its maintenance worker,
// which mini always runs) in one process, every listener on 127.0.0.1 at
// a free port (gRPC ports too, which weed would otherwise put at
// port+10000), WebDAV and the extra gateways (Iceberg, Lance) off, no
// telemetry, logs to stderr only (glog otherwise writes files in /tmp).
// It returns the S3 port.
func serverArgs(dir, data, config string) ([]string, int, error) {
	ports, err := freePorts(10)
	if err != nil {
		return nil, 0, err
	}
	p := func(i int) string { return strconv.Itoa(ports[i]) }
	args := []string{"-logtostderr", "mini",
		"-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir=" + data,
		"-master.port=" + p(0), "-master.port.grpc=" + p(1), "-master.peers=none",
		"-master.volumeSizeLimitMB=64", "-master.telemetry=false",
		"-volume.port=" + p(2), "-volume.port.grpc=" + p(3), "-volume.max=8",
		"-filer.port=" + p(4), "-filer.port.grpc=" + p(5),
		"-s3.port=" + p(6), "-s3.port.grpc=" + p(7), "-s3.config=" + config,
		"-s3.port.iceberg=0", "-s3.port.lance=0",
		"-admin.port=" + p(8), "-admin.port.grpc=" + p(9), "-admin.port.legacy=0", "-admin.ui=false",
		"-webdav=false",
	}
	// The filer's and the gateway's Unix sockets (default
	// /tmp/seaweedfs-*-PORT.sock) go in dir when its path is short enough.
	if len(dir) < 80 {
		args = append(args, "-filer.localSocket="+filepath.Join(dir, "filer.sock"),
			"-s3.localSocket="+filepath.Join(dir, "s3.sock"))
	}
	return args, ports[6], nil
}

// freePorts returns n distinct free ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	seen := map[int]bool{}
	var ports []int
	for len(ports) < n {
		port, err := devstack.FreePort()
		if err != nil {
			return nil, err
		}
		if !seen[port] {
			seen[port] = true
			ports = append(ports, port)
		}
	}
	return ports, nil
}

// writeIdentities writes the gateway's identities file (-s3.config): the
// one identity, allowed everything.
func writeIdentities(name, accessKey, secretKey string) error {
	type cred struct {
		AccessKey string `json:"accessKey"`
		SecretKey string `json:"secretKey"`
	}
	type identity struct {
		Name        string   `json:"name"`
		Credentials []cred   `json:"credentials"`
		Actions     []string `json:"actions"`
	}
	b, err := json.MarshalIndent(map[string][]identity{"identities": {{
		Name:        "attestd",
		Credentials: []cred{{AccessKey: accessKey, SecretKey: secretKey}},
		Actions:     []string{"Admin", "Read", "List", "Tagging", "Write"},
	}}}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(name, append(b, '\n'), 0o600)
}

// waitReady waits (startTimeout at most) until the gateway has the bucket
// (creating it) and stores an object in it.
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	client := s.Client()
	var last error
	for {
		if last = s.ready(ctx, client); last == nil {
			return nil
		}
		select {
		case err := <-s.exited:
			tail := s.logTail()
			if strings.Contains(tail, "Port allocation failed") {
				return fmt.Errorf("weed mini exited at start (%v): %w; %s:\n%s", err, errPortTaken, s.Log, tail)
			}
			return fmt.Errorf("weed mini exited at start (%v); %s:\n%s", err, s.Log, tail)
		case <-ctx.Done():
			return fmt.Errorf("weed mini: S3 on %s not ready within %v: %w (last: %v); %s:\n%s",
				s.Endpoint, startTimeout, ctx.Err(), last, s.Log, s.logTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ready creates the bucket unless the gateway has it, then writes and
// deletes a probe object: the gateway answers, reaches the filer, and a
// volume takes writes.
func (s *Server) ready(ctx context.Context, client *s3.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &s.Bucket}); err != nil {
		_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &s.Bucket})
		var owned *types.BucketAlreadyOwnedByYou
		if err != nil && !errors.As(err, &owned) {
			return fmt.Errorf("create bucket %s: %w", s.Bucket, err)
		}
	}
	key := ".seaweed-ready"
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.Bucket, Key: &key,
		Body: strings.NewReader("ready\n")}); err != nil {
		return fmt.Errorf("write a probe object: %w", err)
	}
	if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.Bucket, Key: &key}); err != nil {
		return fmt.Errorf("delete the probe object: %w", err)
	}
	return nil
}

// logTail is the end of the log file, for errors.
func (s *Server) logTail() string {
	b, err := os.ReadFile(s.Log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// Client is an S3 client for the server, with its static credentials (no
// environment or shared AWS configuration is read).
func (s *Server) Client() *s3.Client {
	cfg := aws.Config{
		Region:      s.Region,
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, "")),
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(s.Endpoint)
		o.UsePathStyle = true
	})
}

// Open opens the bucket with gocloud.dev/blob, through Client.
func (s *Server) Open(ctx context.Context) (*blob.Bucket, error) {
	return s3blob.OpenBucket(ctx, s.Client(), s.Bucket, nil)
}

// URL is the bucket as a gocloud.dev/blob URL (s3blob's), for a process
// that opens it with blob.OpenBucket; the credentials come from its
// environment (Env).
func (s *Server) URL() string {
	q := url.Values{}
	q.Set("endpoint", s.Endpoint)
	q.Set("region", s.Region)
	q.Set("use_path_style", "true")
	q.Set("disable_https", "true")
	return "s3://" + s.Bucket + "?" + q.Encode()
}

// Env is the environment a process opening URL needs: the AWS SDK's
// credential and region variables.
func (s *Server) Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + s.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_REGION=" + s.Region,
	}
}

// Done is closed when weed has exited (stopped, or died).
func (s *Server) Done() <-chan struct{} { return s.done }

// Stop stops weed: SIGTERM, then after 10 s SIGKILL to its process group.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		if s.cmd == nil || s.cmd.Process == nil {
			return
		}
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.exited
		}
	})
}
