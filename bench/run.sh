#!/usr/bin/env bash
# make bench: bounded load runs against nodes on loopback. It starts its own
# throwaway Postgres and Redis (attestd stores), seeds 50 agents and 100,000
# attestations, and drives each scenario with wrk (64 connections, BENCH_DURATION
# each, default 10s). Results go to bench/results/latest.md.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "installing wrk"; apt-get install -y -qq wrk >/dev/null; }
go build -o bin/attestd ./cmd/attestd
go build -o bin/baseline ./bench/baseline
exec ./bin/attestd stores -- bash bench/api.sh "$@"
