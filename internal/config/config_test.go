package config

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPAddr != "127.0.0.1:8080" || c.LogLevel != slog.LevelInfo || c.DBMaxConns != 16 ||
		c.ShutdownTimeout != 10*time.Second || c.RedisPrefix != "attestd:" || c.LocalBytes != 32<<20 || c.RedisCluster || c.CacheMaxBytes != 64<<20 ||
		c.MetricsAddr != "127.0.0.1:9090" {
		t.Fatalf("defaults: %+v", c)
	}
	bad := []map[string]string{
		{"ATTESTD_LOG_LEVEL": "loud"},
		{"ATTESTD_ACCESS_LOG": "some"},
		{"ATTESTD_CACHE": "maybe"},
		{"ATTESTD_REDIS_CLUSTER": "yes"},
		{"ATTESTD_CACHE_LOCAL_MB": "-1"},
		{"ATTESTD_CACHE_MAX_MB": "-1"},
		{"ATTESTD_CACHE_MAX_MB": "0"}, // unbounded in the state's server
		{"ATTESTD_CACHE_MAX_MB": "lots"},
		{"ATTESTD_CACHE_MAX_MB": "64MB"},
		{"ATTESTD_CACHE_MAX_MB": "1e3"},
		{"ATTESTD_CACHE_MAX_MB": "0x40"},
		{"ATTESTD_CACHE_MAX_MB": "16777217"},
		{"ATTESTD_CACHE_MAX_MB": "99999999999999999999"},
		{"ATTESTD_DB_MAX_CONNS": "0"},
		{"ATTESTD_DB_MAX_CONNS": "x"},
		{"ATTESTD_SHUTDOWN_TIMEOUT": "soon"},
	}
	for _, m := range bad {
		if _, err := FromEnv(env(m)); err == nil {
			t.Errorf("%v: want error", m)
		}
	}
	c, err = FromEnv(env(map[string]string{"ATTESTD_CACHE": "off", "ATTESTD_CACHE_LOCAL_MB": "0", "ATTESTD_ACCESS_LOG": "all", "ATTESTD_REDIS_CLUSTER": "on"}))
	if err != nil || !c.CacheDisabled || c.LocalBytes != -1 || !c.AccessLogAll || !c.RedisCluster {
		t.Fatalf("%+v %v", c, err)
	}
	for _, tc := range []struct {
		vars map[string]string
		want int64
	}{
		{map[string]string{"ATTESTD_CACHE_MAX_MB": "512"}, 512 << 20},
		{map[string]string{"ATTESTD_CACHE_MAX_MB": "0", "ATTESTD_CACHE_REDIS_URL": "redis://cache:6379/0"}, -1},
	} {
		if c, err := FromEnv(env(tc.vars)); err != nil || c.CacheMaxBytes != tc.want {
			t.Errorf("%v: cache budget %d %v, want %d", tc.vars, c.CacheMaxBytes, err, tc.want)
		}
	}
	if c, _ := FromEnv(env(map[string]string{"ATTESTD_METRICS_ADDR": "10.0.0.5:9100"})); c.MetricsAddr != "10.0.0.5:9100" {
		t.Fatalf("metrics addr %q", c.MetricsAddr)
	}
	if err := (Config{}).RequireStores(); err == nil {
		t.Fatal("want error for missing URLs")
	}
}

// TestLogFormat: auto is text on a terminal only; json and text are what
// they say; a bad value is refused by FromEnv and read as auto by a logger.
func TestLogFormat(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "ATTESTD_LOG_FORMAT" {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		value    string
		terminal bool
		json     bool
	}{
		{"", true, false}, {"", false, true}, {"auto", true, false}, {"auto", false, true},
		{"json", true, true}, {"text", false, false}, {"TEXT", false, false}, {"loud", false, true},
	} {
		var b strings.Builder
		slog.New(NewLogHandler(&b, LogFormat(env(tc.value)), slog.LevelInfo, tc.terminal)).Info("ready", "addr", "127.0.0.1:8080")
		got := strings.HasPrefix(b.String(), "{")
		if got != tc.json || !strings.Contains(b.String(), "127.0.0.1:8080") {
			t.Errorf("ATTESTD_LOG_FORMAT=%q terminal=%v: %q, want json=%v", tc.value, tc.terminal, b.String(), tc.json)
		}
	}
	if _, err := FromEnv(env("loud")); err == nil {
		t.Error("ATTESTD_LOG_FORMAT=loud: want an error")
	}
	if c, err := FromEnv(env("text")); err != nil || c.LogFormat != LogText {
		t.Errorf("ATTESTD_LOG_FORMAT=text: %q %v", c.LogFormat, err)
	}
}
