package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestSupport keeps test support out of the production
// binary: no package of ours that exists for tests, and package testing
// only where Fiber v2 brings it (its utils package holds assertion helpers,
// of which the linker keeps nothing but testing's init).
func TestBinaryLinksNoTestSupport(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		if strings.HasPrefix(pkg, "github.com/attestd/attestd/internal/testing/") || strings.HasPrefix(pkg, "github.com/attestd/attestd/bench/") {
			t.Errorf("attestd links the test-support package %s", pkg)
		}
		for _, imp := range imports {
			if imp == "testing" && pkg != "github.com/gofiber/fiber/v2/utils" {
				t.Errorf("%s imports testing into the attestd binary", pkg)
			}
		}
	}
}
