package client_test

import (
	"testing"

	"github.com/attestd/attestd/client"
	"golang.org/x/mod/sumdb/note"
)

// BenchmarkVerifyInclusion verifies one proof in a tree of 65,537 leaves
// (17 hashes); BenchmarkOpenCheckpointBaseline is its signature check
// alone (note.Open), the floor.
func BenchmarkVerifyInclusion(b *testing.B) {
	t := &testing.T{}
	l, as := filledLog(t, 65537, 1)
	v, _ := client.NewLogVerifier(l.VerifierKey)
	p, err := l.Proof(40000, 65537, as[40000])
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := client.VerifyInclusion(v, as[40000], p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenCheckpointBaseline(b *testing.B) {
	t := &testing.T{}
	l, _ := filledLog(t, 3, 1)
	cp, _ := l.Checkpoint(3)
	nv, _ := note.NewVerifier(l.VerifierKey)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := note.Open([]byte(cp), note.VerifierList(nv)); err != nil {
			b.Fatal(err)
		}
	}
}
