#!/usr/bin/env bash
# make fuzz: a short pass over every fuzz target (FUZZTIME each, default
# 10s). Inputs that fail are written to the package's testdata/fuzz and
# become regression tests that `make test` runs.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${FUZZTIME:-10s}
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/func //'); do
    echo "== $pkg $target ($t)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$t" "$pkg"
  done
done
