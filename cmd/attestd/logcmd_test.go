package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/translog"
)

func TestLogKeygen(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	var out bytes.Buffer
	if err := logKeygen(nil, env(map[string]string{"ATTESTD_PUBLIC_URL": "https://attestd.example.com"}), &out); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, l := range strings.Split(out.String(), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			keys = append(keys, l)
		}
	}
	if len(keys) != 2 || !strings.HasPrefix(keys[0], "PRIVATE+KEY+attestd.example.com/log+") {
		t.Fatalf("keygen printed %q", out.String())
	}
	k, err := translog.ParseKey(keys[0])
	if err != nil || !k.CanSign() || k.VerifierKey != keys[1] || k.Name != "attestd.example.com/log" {
		t.Fatalf("private key: %+v %v", k, err)
	}
	out.Reset()
	if err := logKeygen([]string{"--name", "other.example/log"}, env(nil), &out); err != nil || !strings.Contains(out.String(), "\nother.example/log+") {
		t.Fatalf("--name: %v %q", err, out.String())
	}
	for _, args := range [][]string{nil, {"--name", "has space"}, {"--name", "a+b"}, {"extra"}} {
		if err := logKeygen(args, env(nil), &bytes.Buffer{}); err == nil {
			t.Errorf("keygen %q: accepted", args)
		}
	}
}
