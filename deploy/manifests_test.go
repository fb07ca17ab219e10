package deploy_test

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/testing/allvars"
	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite compose/nginx-site.conf from nginx.conf")

// ours is a variable name of the kind attestd reads.
var ours = regexp.MustCompile(`^(ATTESTD_|DATABASE_|REDIS_)[A-Z0-9_]*$`)

// unknown is every name of ours in set that no package reads, sorted.
func unknown(set map[string]string, known map[string]bool) []string {
	var out []string
	for name := range set {
		if ours.MatchString(name) && !known[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func TestUnknownFindsWhatNoPackageReads(t *testing.T) {
	known := allvars.Names()
	got := unknown(map[string]string{"ATTESTD_RATE_LIMIT": "1", "ATTESTD_RATE_LIMITS": "1", "DATABASE_READ_URL": "x",
		"REDIS_URL": "x", "PATH": "/bin", "attestd_log_level": "x"}, known)
	if !slices.Equal(got, []string{"ATTESTD_RATE_LIMITS", "DATABASE_READ_URL"}) {
		t.Fatalf("unknown = %v", got)
	}
}

// envFile reads KEY=value lines, commented-out examples (#KEY=value)
// included: an operator uncomments them as they are.
func envFile(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "#")
		if k, v, ok := strings.Cut(line, "="); ok && !strings.ContainsAny(k, " \t") && k != "" {
			env[k] = v
		}
	}
	return env
}

func TestSystemdEnvironmentSetsOnlyWhatAttestdReads(t *testing.T) {
	env := envFile(t, "attestd.env.example")
	if len(env) < 10 {
		t.Fatalf("attestd.env.example: %d variables read; the parser is wrong", len(env))
	}
	for _, name := range unknown(env, allvars.Names()) {
		t.Errorf("attestd.env.example sets %s, which attestd does not read", name)
	}
	for _, unit := range []string{"attestd-serve.service", "attestd-index.service", "attestd-worker.service", "attestd-backup.service", "attestd-dataset.service"} {
		b, err := os.ReadFile(unit)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("EnvironmentFile=/etc/attestd/attestd.env")) {
			t.Errorf("%s does not read /etc/attestd/attestd.env", unit)
		}
	}
	b, err := os.ReadFile("attestd-serve.service")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^TimeoutStopSec=(\d+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("attestd-serve.service sets no TimeoutStopSec (systemd's default, 90 s, would hide a stuck stop)")
	}
	sec, _ := strconv.Atoi(string(m[1]))
	checkStopGrace(t, "attestd-serve.service", env, time.Duration(sec)*time.Second, 0)
}

func TestContainerfileSetsOnlyWhatAttestdReads(t *testing.T) {
	b, err := os.ReadFile("Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	env := map[string]string{}
	for _, m := range regexp.MustCompile(`([A-Z][A-Z0-9_]*)=(\S+)`).FindAllStringSubmatch(src, -1) {
		env[m[1]] = m[2]
	}
	for _, name := range unknown(env, allvars.Names()) {
		t.Errorf("Containerfile sets %s, which attestd does not read", name)
	}
	for _, want := range []string{"FROM scratch", "USER 65532:65532", `HEALTHCHECK `, `"/attestd", "healthcheck"`,
		"/etc/ssl/certs/ca-certificates.crt", "ATTESTD_HTTP_ADDR=0.0.0.0:8080"} {
		if !strings.Contains(src, want) {
			t.Errorf("Containerfile lacks %q", want)
		}
	}
}

// composeFile is the part of compose.yaml the checks read.
type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		EnvFile     []string          `yaml:"env_file"`
		Deploy      struct {
			Replicas int `yaml:"replicas"`
		} `yaml:"deploy"`
		Healthcheck struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
		StopGracePeriod string    `yaml:"stop_grace_period"`
		Networks        yaml.Node `yaml:"networks"`
		Volumes         []string  `yaml:"volumes"`
	} `yaml:"services"`
}

func TestComposeIsTheFleet(t *testing.T) {
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	known := allvars.Names()
	for name, s := range c.Services {
		env := map[string]string{}
		for k, v := range s.Environment {
			env[k] = v
		}
		for _, f := range s.EnvFile {
			// The operator's copy is not in the repository; its example is.
			for k, v := range envFile(t, f+".example") {
				env[k] = v
			}
		}
		for _, v := range unknown(env, known) {
			t.Errorf("compose service %s sets %s, which attestd does not read", name, v)
		}
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, "./") {
				if _, err := os.Stat(src); err != nil {
					t.Errorf("compose service %s mounts %s: %v", name, src, err)
				}
			}
		}
	}
	for _, want := range []struct {
		service  string
		command  string
		replicas int
	}{{"serve", "serve", 3}, {"index", "index", 2}, {"worker", "worker", 2}, {"migrate", "migrate", 0}} {
		s, ok := c.Services[want.service]
		switch {
		case !ok:
			t.Errorf("compose has no %s service", want.service)
		case len(s.Command) != 1 || s.Command[0] != want.command:
			t.Errorf("compose %s runs %v, want attestd %s", want.service, s.Command, want.command)
		case s.Deploy.Replicas != want.replicas:
			t.Errorf("compose %s has %d replicas, want %d", want.service, s.Deploy.Replicas, want.replicas)
		}
	}
	for _, name := range []string{"nginx", "redis", "redis-cache", "postgres", "postgres-replica"} {
		if _, ok := c.Services[name]; !ok {
			t.Errorf("compose has no %s service", name)
		}
	}
	// Both Redis have a memory bound: the state's refuses writes when full
	// (nothing it holds is ever evicted), the cache's evicts only entries
	// with a TTL; the fleet points its cache at the second.
	for name, policy := range map[string]string{"redis": "noeviction", "redis-cache": "volatile-lru"} {
		cmd := " " + strings.Join(c.Services[name].Command, " ") + " "
		if !strings.Contains(cmd, " --maxmemory ") || !strings.Contains(cmd, " --maxmemory-policy "+policy+" ") {
			t.Errorf("compose %s runs %q: want --maxmemory and --maxmemory-policy %s", name, cmd, policy)
		}
	}
	if env, err := os.ReadFile("compose/fleet.env.example"); err != nil || !strings.Contains(string(env), "ATTESTD_CACHE_REDIS_URL=redis://redis-cache:") {
		t.Errorf("compose/fleet.env.example does not point ATTESTD_CACHE_REDIS_URL at redis-cache (%v)", err)
	}
	// The nodes believe nginx's X-Forwarded-For, and only nginx's.
	var nets map[string]struct {
		IPv4 string `yaml:"ipv4_address"`
	}
	nginxNets := c.Services["nginx"].Networks
	if err := nginxNets.Decode(&nets); err != nil {
		t.Fatalf("nginx networks: %v", err)
	}
	ip := net.ParseIP(nets["fleet"].IPv4)
	_, trusted, err := net.ParseCIDR(c.Services["serve"].Environment["ATTESTD_TRUSTED_PROXIES"])
	if ip == nil || err != nil || !trusted.Contains(ip) {
		t.Errorf("serve trusts %q, nginx is %q", c.Services["serve"].Environment["ATTESTD_TRUSTED_PROXIES"], nets["fleet"].IPv4)
	}
	// Index and worker containers check /health on their internal
	// listener (healthcheck -role reads the listener from the same
	// variable the process does).
	for _, s := range []string{"index", "worker"} {
		hc := strings.Join(c.Services[s].Healthcheck.Test, " ")
		portOf(t, c.Services[s].Environment[map[string]string{"index": "ATTESTD_INDEXER_METRICS_ADDR", "worker": "ATTESTD_WORKER_METRICS_ADDR"}[s]])
		if !strings.Contains(hc, "/attestd healthcheck") || !strings.Contains(hc, "-role "+s) || strings.Contains(hc, "-url") {
			t.Errorf("compose %s health check %q does not ask the %s's /health (healthcheck -role %s)", s, hc, s, s)
		}
	}
	// An API node is given the time to drain and then finish what is in
	// flight before it is killed.
	serveEnv := map[string]string{}
	for _, f := range c.Services["serve"].EnvFile {
		for k, v := range envFile(t, f+".example") {
			serveEnv[k] = v
		}
	}
	for k, v := range c.Services["serve"].Environment {
		serveEnv[k] = v
	}
	grace, err := time.ParseDuration(c.Services["serve"].StopGracePeriod)
	if err != nil {
		t.Errorf("compose serve: stop_grace_period %q: %v", c.Services["serve"].StopGracePeriod, err)
	}
	checkStopGrace(t, "compose serve", serveEnv, grace, 0)
}

// checkStopGrace fails unless grace (the time a process has between
// SIGTERM and SIGKILL), less a pause before SIGTERM, covers the drain and
// the shutdown the environment env sets (or their defaults), and unless
// the node drains at all.
func checkStopGrace(t *testing.T, what string, env map[string]string, grace, preStop time.Duration) {
	t.Helper()
	cfg, err := config.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("%s: its environment: %v", what, err)
	}
	if cfg.DrainTimeout <= 0 {
		t.Errorf("%s does not drain (ATTESTD_DRAIN_TIMEOUT=0): load balancers learn of a restart from failed requests", what)
	}
	if need := preStop + cfg.DrainTimeout + cfg.ShutdownTimeout; grace < need {
		t.Errorf("%s: %v to stop, less than %v (pause %v + drain %v + shutdown %v): killed in the middle",
			what, grace, need, preStop, cfg.DrainTimeout, cfg.ShutdownTimeout)
	}
}

// TestComposeNginxSiteIsRendered: compose's nginx site is deploy/nginx.conf
// with the listener, upstream and cache path of the compose network, and
// nothing else changed (go test ./deploy -run ComposeNginx -update rewrites it).
func TestComposeNginxSiteIsRendered(t *testing.T) {
	site, err := os.ReadFile("nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	out, err := devstack.RenderNginxSite(site, 80, "/var/cache/nginx/attestd", []string{"serve:8080"})
	if err != nil {
		t.Fatal(err)
	}
	out = bytes.Replace(out, []byte("listen 127.0.0.1:80;"), []byte("listen 80;"), 1)
	out = append([]byte("# Generated from deploy/nginx.conf by deploy/manifests_test.go (-update): edit that file.\n"+
		"# \"serve\" resolves to every API container when nginx starts.\n"), out...)
	const path = "compose/nginx-site.conf"
	if *update {
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(have, out) {
		t.Fatalf("%s is not deploy/nginx.conf rendered for compose (%v): run go test ./deploy -run ComposeNginx -update", path, err)
	}
}

// k8sObject is the part of a Kubernetes object the checks read.
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	Spec       struct {
		Replicas int `yaml:"replicas"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		ScaleTargetRef struct {
			Kind, Name string
		} `yaml:"scaleTargetRef"`
		MinReplicas  int `yaml:"minReplicas"`
		MinAvailable any `yaml:"minAvailable"`
		Template     struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				TerminationGracePeriodSeconds *int           `yaml:"terminationGracePeriodSeconds"`
				InitContainers                []k8sContainer `yaml:"initContainers"`
				Containers                    []k8sContainer `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type k8sContainer struct {
	Name    string   `yaml:"name"`
	Args    []string `yaml:"args"`
	EnvFrom []struct {
		ConfigMapRef *struct{ Name string } `yaml:"configMapRef"`
		SecretRef    *struct{ Name string } `yaml:"secretRef"`
	} `yaml:"envFrom"`
	Env []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
	Lifecycle      struct {
		PreStop *struct {
			Sleep *struct {
				Seconds int `yaml:"seconds"`
			} `yaml:"sleep"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
}

type k8sProbe struct {
	HTTPGet *struct {
		Path string    `yaml:"path"`
		Port yaml.Node `yaml:"port"`
	} `yaml:"httpGet"`
}

func readK8s(t *testing.T) []k8sObject {
	t.Helper()
	files, err := filepath.Glob("k8s/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests under k8s/: %v", err)
	}
	var objs []k8sObject
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var o k8sObject
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if o.Kind != "" {
				objs = append(objs, o)
			}
		}
	}
	return objs
}

func TestKubernetesManifests(t *testing.T) {
	objs := readK8s(t)
	known := allvars.Names()
	find := func(kind, name string) *k8sObject {
		for i := range objs {
			if objs[i].Kind == kind && objs[i].Metadata.Name == name {
				return &objs[i]
			}
		}
		t.Errorf("no %s %s under k8s/", kind, name)
		return nil
	}
	cm, sec := find("ConfigMap", "attestd"), find("Secret", "attestd")
	if cm == nil || sec == nil {
		t.FailNow()
	}
	for _, v := range unknown(cm.Data, known) {
		t.Errorf("ConfigMap attestd sets %s, which attestd does not read", v)
	}
	for _, v := range unknown(sec.StringData, known) {
		t.Errorf("Secret attestd sets %s, which attestd does not read", v)
	}
	for _, s := range []string{"DATABASE_URL", "REDIS_URL", "ATTESTD_WEBHOOK_SECRET_KEYS"} {
		if _, ok := sec.StringData[s]; !ok {
			t.Errorf("Secret attestd lacks %s", s)
		}
	}
	// Credentials belong in the Secret, never in the ConfigMap.
	for _, s := range []string{"DATABASE_URL", "DATABASE_READ_URLS", "REDIS_URL", "ATTESTD_WEBHOOK_SECRET_KEYS", "ATTESTD_PURGE_HEADER",
		"ATTESTD_X402_FEE_PAYER_KEYPAIR", "ATTESTD_API_KEY"} {
		if _, ok := cm.Data[s]; ok {
			t.Errorf("ConfigMap attestd sets %s, a credential: put it in the Secret", s)
		}
	}
	probeVar := map[string]string{"serve": "ATTESTD_HTTP_ADDR", "index": "ATTESTD_INDEXER_METRICS_ADDR", "worker": "ATTESTD_WORKER_METRICS_ADDR"}
	// Readiness asks whether the process works: /health (an API node's
	// under /api/v1), 503 while it starts, lacks its stores or drains.
	// Liveness of index and worker asks /metrics, which answers while the
	// process runs: restarting it would not bring a store back.
	probePath := map[string]map[string]string{
		"readiness": {"serve": "/api/v1/health", "index": "/health", "worker": "/health"},
		"liveness":  {"serve": "/api/v1/health", "index": "/metrics", "worker": "/metrics"},
	}
	for _, role := range []string{"serve", "index", "worker"} {
		d := find("Deployment", "attestd-"+role)
		if d == nil {
			continue
		}
		if !mapContains(d.Spec.Template.Metadata.Labels, d.Spec.Selector.MatchLabels) || len(d.Spec.Selector.MatchLabels) == 0 {
			t.Errorf("Deployment %s: its selector does not select its pods", d.Metadata.Name)
		}
		for _, c := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
			env := map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
			for _, v := range unknown(env, known) {
				t.Errorf("Deployment %s container %s sets %s, which attestd does not read", d.Metadata.Name, c.Name, v)
			}
			var cmRef, secRef bool
			for _, ef := range c.EnvFrom {
				cmRef = cmRef || (ef.ConfigMapRef != nil && ef.ConfigMapRef.Name == "attestd")
				secRef = secRef || (ef.SecretRef != nil && ef.SecretRef.Name == "attestd")
			}
			if !cmRef || !secRef {
				t.Errorf("Deployment %s container %s does not take its environment from ConfigMap and Secret attestd", d.Metadata.Name, c.Name)
			}
		}
		if len(d.Spec.Template.Spec.Containers) != 1 {
			t.Errorf("Deployment %s: %d containers, want 1", d.Metadata.Name, len(d.Spec.Template.Spec.Containers))
			continue
		}
		c := d.Spec.Template.Spec.Containers[0]
		if len(c.Args) != 1 || c.Args[0] != role {
			t.Errorf("Deployment %s runs attestd %v, want %s", d.Metadata.Name, c.Args, role)
		}
		var listen string
		for _, e := range c.Env {
			if e.Name == probeVar[role] {
				listen = e.Value
			}
		}
		port := portOf(t, listen)
		for kind, p := range map[string]*k8sProbe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
			if p == nil || p.HTTPGet == nil {
				t.Errorf("Deployment %s: no HTTP %s probe", d.Metadata.Name, kind)
				continue
			}
			if p.HTTPGet.Path != probePath[kind][role] {
				t.Errorf("Deployment %s: %s probe asks %s, want %s", d.Metadata.Name, kind, p.HTTPGet.Path, probePath[kind][role])
			}
			probePort := p.HTTPGet.Port.Value
			for _, cp := range c.Ports {
				if cp.Name == probePort {
					probePort = strconv.Itoa(cp.ContainerPort)
				}
			}
			if probePort != port {
				t.Errorf("Deployment %s: %s probe asks port %s; %s listens on %q", d.Metadata.Name, kind, probePort, probeVar[role], listen)
			}
		}
	}
	// An API pod is given the time to drain and finish what is in flight.
	if d := find("Deployment", "attestd-serve"); d != nil && len(d.Spec.Template.Spec.Containers) == 1 {
		ps := d.Spec.Template.Spec
		grace := 30 * time.Second // Kubernetes' default
		if ps.TerminationGracePeriodSeconds != nil {
			grace = time.Duration(*ps.TerminationGracePeriodSeconds) * time.Second
		}
		env := map[string]string{}
		for k, v := range cm.Data {
			env[k] = v
		}
		var preStop time.Duration
		c := ps.Containers[0]
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		if c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
			preStop = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
		}
		checkStopGrace(t, "Deployment attestd-serve", env, grace, preStop)
	}
	if hpa := find("HorizontalPodAutoscaler", "attestd-serve"); hpa != nil {
		if hpa.Spec.ScaleTargetRef.Kind != "Deployment" || hpa.Spec.ScaleTargetRef.Name != "attestd-serve" || hpa.Spec.MinReplicas < 2 {
			t.Errorf("HPA attestd-serve scales %+v from %d", hpa.Spec.ScaleTargetRef, hpa.Spec.MinReplicas)
		}
	}
	pdb, serve := find("PodDisruptionBudget", "attestd-serve"), find("Deployment", "attestd-serve")
	if pdb != nil && serve != nil && (!mapContains(serve.Spec.Template.Metadata.Labels, pdb.Spec.Selector.MatchLabels) || pdb.Spec.MinAvailable == nil) {
		t.Errorf("PodDisruptionBudget attestd-serve does not keep API pods available")
	}
}

func mapContains(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// portOf is the port of a host:port listener.
func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Errorf("listener %q: %v", addr, err)
	}
	return port
}
