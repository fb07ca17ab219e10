#!/usr/bin/env bash
# make bench: every bounded load benchmark, on loopback only. Each part
# starts its own throwaway Postgres and Redis. Choose parts with
# BENCH="api ratelimit indexer premium x402 webhook scale edge" (default: all).
#   api        bare Fiber baseline vs hot, cold and uncached API reads (wrk, 64 connections)
#   ratelimit  limiter on vs off, many client IPs through a trusted proxy (wrk)
#   indexer    backfill throughput and live ingest latency against the chain simulator
#   premium    bulk verify, full history and forensic report latencies
#   x402       local payment verification (µs) and paid vs keyed premium requests/s on the simulator
#   webhook    10,000 events to 10 webhooks (one receiver dead): deliveries/s, event-to-delivery latency
#   scale      uncached reads at 10M attestations against 100k (the data is
#              seeded once, with attestd seed, and kept under .run/bench-scale)
#   edge       304 answers vs the bare Fiber baseline; a hot list through the nginx edge vs one node
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "installing wrk"; apt-get install -y -qq wrk >/dev/null; }
go build -o bin/attestd ./cmd/attestd
go build -o bin/baseline ./bench/baseline
for part in ${BENCH:-api ratelimit indexer premium x402 webhook scale edge}; do
  echo "== bench: $part" >&2
  case $part in
    api)       ./bin/attestd stores -- bash bench/api.sh ;;
    ratelimit) go run ./bench/ratelimit -duration "${BENCH_DURATION:-8s}" -rounds 1 ;;
    indexer)   go run ./bench/indexer -backfill 50000 -single 10000 -live 300 ;;
    premium)   go run ./bench/premium -n 50 -cold 15 ;;
    x402)      go run ./bench/x402 -n 5000 -duration 5s -c 16 ;;
    webhook)   go run ./bench/webhook -events 10000 -webhooks 10 -rate 250 ;;
    scale)     go run ./bench/scale -n "${BENCH_SCALE_N:-400}" -out bench/scale/latest.md ;;
    edge)      ./bin/attestd stores -- go run ./bench/edge -duration "${BENCH_DURATION:-10s}" | tee bench/edge/latest.md ;;
    *) echo "unknown bench part $part" >&2; exit 2 ;;
  esac
done
