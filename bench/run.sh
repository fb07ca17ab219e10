#!/usr/bin/env bash
# make bench: every bounded load benchmark, on loopback only. Each part
# starts its own throwaway Postgres and Redis. Choose parts with
# BENCH="api ratelimit indexer premium x402 webhook webhookrecovery scale edge mcp fleet" (default: all).
# It prints every part's figures and writes them, with the machine described,
# to bench/RESULTS.md (BENCH_OUT=path to write elsewhere). A part that fails
# is marked failed there and the others still run; the exit status says so.
#   api        bare Fiber baseline vs hot, cold and uncached API reads (wrk, 64 connections)
#   ratelimit  limiter on vs off, many client IPs through a trusted proxy (wrk)
#   indexer    backfill throughput and live ingest latency against the chain simulator
#   premium    bulk verify, full history and forensic report latencies
#   x402       local payment verification (µs) and paid vs keyed premium requests/s on the simulator
#   webhook    10,000 events to 10 webhooks (one receiver dead): deliveries/s, event-to-delivery latency
#   webhookrecovery  recovery of 100,000 failed deliveries beside live events: deliveries/s, live p99
#   scale      uncached reads at 10M attestations against 100k (the data is
#              seeded once, with attestd seed, and kept under .run/bench-scale)
#   edge       304 answers vs the bare Fiber baseline; a hot list through the nginx edge vs one node
#   mcp        a free tool call over a node's /mcp (protocols 2025-11-25 and 2026-07-28) vs the REST
#              read giving the same answer on the same node, and `attestd mcp --http` beside them (wrk)
#   fleet      lists through nginx over 3 nodes (make cluster's fleet) vs one node without nginx,
#              with the CPU each process used (what saturates)
#   stream     5,000 live stream clients on one node: ingest-to-client latency, node RSS, and a
#              hot list's requests/s with the streams open vs without (wrk)
#   restore    from attestd restore of a backup of 1,000,000 attestations to serving the log's
#              witnessed size again (pg_restore, the regrowth of what the backup lacked, the witness)
#   streambudget  3,200 never-reading streams (100 addresses x the per-IP cap), resumed from an old
#              cursor vs live: the node's RSS peak against its stream buffer budget
#   dataset    the daily Parquet dataset: attestd dataset --once over a log of BENCH_DATASET_N
#              attestations (default 1,000,000) over 365 days (rows/s, bytes, peak RSS, and a day of
#              1,000,000 rows to show the RSS does not follow the day), a day's file vs the gzip'd
#              API pages of its rows, and 64 range readers on a node vs a bare file server; its
#              database and files (about 1.7 GB per million) go under BENCH_DATASET_DIR (default $TMPDIR)
set -uo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "installing wrk"; apt-get install -y -qq wrk >/dev/null; }
go build -o bin/attestd ./cmd/attestd || exit 1
go build -o bin/baseline ./bench/baseline || exit 1
PARTS=${BENCH:-api ratelimit indexer premium x402 webhook webhookrecovery scale edge mcp fleet stream streambudget restore dataset}
case " $PARTS " in *" dataset "*) [ -x /usr/bin/time ] || { echo "installing time"; apt-get install -y -qq time >/dev/null; } ;; esac
OUT=${BENCH_OUT:-bench/RESULTS.md}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
{
  echo "# attestd benchmarks: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo "Written by \`make bench\` (bench/run.sh) in one run; parts: $PARTS."
  echo
  echo "Machine: $(nproc) cores ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), $(awk '/MemTotal/ {printf "%.1f", $2/1048576}' /proc/meminfo) GiB,"
  echo "$(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r), $(go version | awk '{print $3}'), commit $(git describe --always --dirty 2>/dev/null || echo unknown)."
  echo "Load average (1, 5, 15 min) at the start: $(cut -d' ' -f1-3 /proc/loadavg). Everything runs on loopback on this machine, load generator included."
  echo
} > "$TMP/head.md"
failed=()
for part in $PARTS; do
  echo "== bench: $part" >&2
  start=$(date +%s)
  case $part in
    api)       ./bin/attestd stores -- bash bench/api.sh ;;
    ratelimit) go run ./bench/ratelimit -duration "${BENCH_DURATION:-8s}" -rounds 1 ;;
    indexer)   go run ./bench/indexer -backfill 50000 -single 10000 -live 300 ;;
    premium)   go run ./bench/premium -n 50 -cold 15 ;;
    x402)      go run ./bench/x402 -n 5000 -duration 5s -c 16 ;;
    webhook)   go run ./bench/webhook -events 10000 -webhooks 10 -rate 250 ;;
    webhookrecovery) go run ./bench/webhookrecovery -failed 100000 -live 4 -rate 100 -baseline 15s ;;
    scale)     go run ./bench/scale -n "${BENCH_SCALE_N:-400}" -out bench/scale/latest.md ;;
    edge)      ./bin/attestd stores -- go run ./bench/edge -duration "${BENCH_DURATION:-10s}" | tee bench/edge/latest.md ;;
    mcp)       go run ./bench/mcp -duration "${BENCH_DURATION:-5s}" ;;
    fleet)     go run ./bench/fleet -duration "${BENCH_FLEET_DURATION:-5s}" ;;
    stream)    ./bin/attestd stores -- go run ./bench/stream -clients "${BENCH_STREAM_CLIENTS:-5000}" -rounds 20 -duration "${BENCH_DURATION:-5s}" | tee bench/stream/latest.md ;;
    streambudget) ./bin/attestd stores -- go run ./bench/streambudget -addresses 100 -hold 20s | tee bench/streambudget/latest.md ;;
    restore)   ./bin/attestd stores -- go run ./bench/log -parts restore -restore-n "${BENCH_RESTORE_N:-1000000}" | tee bench/log/restore-latest.md ;;
    dataset)   go run ./bench/dataset -n "${BENCH_DATASET_N:-1000000}" -dir "${BENCH_DATASET_DIR:-${TMPDIR:-/tmp}}" ;;
    *) echo "unknown bench part $part" >&2; exit 2 ;;
  esac > >(tee "$TMP/$part.md")
  rc=$?
  wait # the tee
  {
    echo "## part: $part ($(( $(date +%s) - start )) s)"
    echo
    if [ $rc -ne 0 ]; then echo "**This part failed (exit status $rc); its output so far:**"; echo; failed+=("$part"); fi
    sed 's/^# /### /; s/^## /### /' "$TMP/$part.md"
    echo
  } >> "$TMP/body.md"
done
{
  cat "$TMP/head.md"
  echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  cat "$TMP/body.md"
} > "$OUT"
echo "wrote $OUT" >&2
if [ ${#failed[@]} -gt 0 ]; then echo "failed parts: ${failed[*]}" >&2; exit 1; fi
