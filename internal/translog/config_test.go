package translog

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

func TestConfigFromEnv(t *testing.T) {
	skey, vkey, err := note.GenerateKey(rand.Reader, "example.com/log")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte("\n"+skey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", 5000)), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := ConfigFromEnv(env(nil))
	if err != nil || c.Enabled() || c.CheckpointInterval.String() != "2s" || c.Batch != 5000 {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	for _, m := range []map[string]string{{"ATTESTD_LOG_KEY": skey}, {"ATTESTD_LOG_KEY_FILE": file}} {
		c, err := ConfigFromEnv(env(m))
		if err != nil || !c.Key.CanSign() || c.Key.VerifierKey != vkey || c.Key.Name != "example.com/log" {
			t.Fatalf("%v: %+v %v", m, c.Key, err)
		}
	}
	c, err = ConfigFromEnv(env(map[string]string{"ATTESTD_LOG_KEY": vkey}))
	if err != nil || c.Key.CanSign() || !c.Enabled() {
		t.Fatalf("verifier key: %+v %v", c.Key, err)
	}
	for _, m := range []map[string]string{
		{"ATTESTD_LOG_KEY": skey, "ATTESTD_LOG_KEY_FILE": file},
		{"ATTESTD_LOG_KEY_FILE": big},
		{"ATTESTD_LOG_KEY_FILE": filepath.Join(t.TempDir(), "none")},
		{"ATTESTD_LOG_KEY": skey[:len(skey)-4]},
		{"ATTESTD_LOG_KEY": "PRIVATE+KEY+" + vkey},
		{"ATTESTD_LOG_KEY": "not a key"},
		{"ATTESTD_LOG_KEY": vkey + "x"},
		{"ATTESTD_LOG_CHECKPOINT_INTERVAL": "1ms"},
		{"ATTESTD_LOG_BATCH": "0"},
		{"ATTESTD_LOG_POLL_INTERVAL": "forever"},
	} {
		_, err := ConfigFromEnv(env(m))
		if err == nil {
			t.Errorf("%v: accepted", m)
			continue
		}
		// A private key never appears in an error.
		if secret := strings.TrimPrefix(skey, "PRIVATE+KEY+example.com/log+"); strings.Contains(err.Error(), secret[10:30]) {
			t.Errorf("%v: the error quotes the key: %v", m, err)
		}
	}
}
