#!/usr/bin/env bash
# Runs inside `attestd stores`: ATTESTD_TEST_POSTGRES_URL and
# ATTESTD_TEST_REDIS_URL point at throwaway servers.
set -euo pipefail
DUR=${BENCH_DURATION:-10s}
CONNS=${BENCH_CONNECTIONS:-64}
THREADS=${BENCH_THREADS:-2}
OUT=bench/results/latest.md
export DATABASE_URL=$ATTESTD_TEST_POSTGRES_URL REDIS_URL=$ATTESTD_TEST_REDIS_URL
export ATTESTD_LOG_LEVEL=warn ATTESTD_RATE_LIMIT=0 ATTESTD_METRICS_ADDR=
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

./bin/attestd seed --agents 50 --attestations 100000
psql -qAt "$DATABASE_URL" -c "VACUUM ANALYZE" >/dev/null

ATTESTD_HTTP_ADDR=127.0.0.1:18080 ./bin/attestd serve & pids+=($!); HOT=$!
ATTESTD_HTTP_ADDR=127.0.0.1:18081 ATTESTD_CACHE=off ./bin/attestd serve & pids+=($!); UNCACHED=$!
./bin/baseline -addr 127.0.0.1:18082 & pids+=($!)
wait_port() { for _ in $(seq 200); do curl -s -o /dev/null "http://127.0.0.1:$1/" && return 0; sleep 0.1; done; echo "port $1 not up" >&2; return 1; }
for port in 18080 18081 18082; do wait_port $port; done
sleep 1

ID=$(psql -qAt "$DATABASE_URL" -c "SELECT pda FROM attestations ORDER BY ts DESC LIMIT 1 OFFSET 500")
# Random ids and random filtered queries for the cold and uncached runs.
LUA_IDS=$(mktemp --suffix .lua); LUA_LISTS=$(mktemp --suffix .lua)
{
  echo "local ids = {"
  psql -qAt "$DATABASE_URL" -c "SELECT '\"' || pda || '\",' FROM attestations ORDER BY random() LIMIT 5000"
  echo "}"
  echo 'request = function() return wrk.format("GET", "/api/v1/attestations/" .. ids[math.random(#ids)]) end'
} > "$LUA_IDS"
{
  echo "local agents = {"
  psql -qAt "$DATABASE_URL" -c "SELECT '\"' || pda || '\",' FROM agents"
  echo "}"
  echo 'local types = {"Transaction","Decision","ModelInvocation","ToolCall","ResourceAccess","PolicyCheck","Custom"}'
  echo 'request = function()'
  echo '  local q = "/api/v1/attestations?limit=20&agentPda=" .. agents[math.random(#agents)] .. "&actionType=" .. types[math.random(#types)] .. "&offset=" .. math.random(0, 200)'
  echo '  return wrk.format("GET", q)'
  echo 'end'
} > "$LUA_LISTS"

rss_max=0
sample_rss() { # pid: track the node's peak RSS while wrk runs
  local pid=$1 r
  while kill -0 "$pid" 2>/dev/null && [ -e "/proc/$pid" ]; do
    r=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    [ "${r:-0}" -gt "$rss_max" ] && rss_max=$r
    [ -e /tmp/attestd-bench-stop ] && break
    sleep 0.2
  done
  echo "$rss_max" > /tmp/attestd-bench-rss
}

declare -A RPS P99 P50
run() { # name url [lua] [pid-to-sample] [extra wrk args]
  local name=$1 url=$2 lua=${3:-} pid=${4:-} extra=${5:-} out
  local sampler=""
  rm -f /tmp/attestd-bench-stop
  if [ -n "$pid" ]; then rss_max=0; sample_rss "$pid" & sampler=$!; fi
  local args=(-t"$THREADS" -c"$CONNS" -d"$DUR" --latency)
  [ -n "$lua" ] && args+=(-s "$lua")
  [ -n "$extra" ] && args+=(-H "$extra")
  out=$(wrk "${args[@]}" "$url")
  touch /tmp/attestd-bench-stop
  if [ -n "$sampler" ]; then wait "$sampler" 2>/dev/null || true; fi
  echo "$out" | sed "s/^/[$name] /" >&2
  if echo "$out" | grep -q "Non-2xx"; then echo "[$name] WARNING: non-2xx answers" >&2; fi
  RPS[$name]=$(echo "$out" | awk '/Requests\/sec/ {print int($2)}')
  P50[$name]=$(echo "$out" | awk '$1=="50%" {print $2}')
  P99[$name]=$(echo "$out" | awk '$1=="99%" {print $2}')
}

run baseline "http://127.0.0.1:18082/json"
curl -sf "http://127.0.0.1:18080/api/v1/attestations/$ID" >/dev/null
run hot_attestation "http://127.0.0.1:18080/api/v1/attestations/$ID" "" "$HOT"
RSS_HOT=$(cat /tmp/attestd-bench-rss)
run hot_list "http://127.0.0.1:18080/api/v1/attestations?limit=20"
run hot_list_gzip "http://127.0.0.1:18080/api/v1/attestations?limit=20" "" "" "Accept-Encoding: gzip"
run hot_stats "http://127.0.0.1:18080/api/v1/stats"
redis-cli -u "$REDIS_URL" FLUSHALL >/dev/null 2>&1 || true
kill "$HOT"; wait "$HOT" 2>/dev/null || true
ATTESTD_HTTP_ADDR=127.0.0.1:18080 ./bin/attestd serve & pids+=($!); HOT=$!; wait_port 18080
run cold_filtered_lists "http://127.0.0.1:18080" "$LUA_LISTS" "$HOT"
RSS_COLD=$(cat /tmp/attestd-bench-rss)
run uncached_attestation "http://127.0.0.1:18081" "$LUA_IDS" "$UNCACHED"
run uncached_lists "http://127.0.0.1:18081" "$LUA_LISTS"

base=${RPS[baseline]}
{
  echo "# attestd benchmark: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo "Machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB. wrk -t$THREADS -c$CONNS -d$DUR on loopback; 50 agents, 100,000 attestations; rate limit off."
  echo
  echo "| scenario | requests/s | vs baseline | p50 | p99 |"
  echo "|---|---:|---:|---:|---:|"
  for s in baseline hot_attestation hot_list hot_list_gzip hot_stats cold_filtered_lists uncached_attestation uncached_lists; do
    pct=$(awk -v a="${RPS[$s]}" -v b="$base" 'BEGIN {printf "%.0f%%", 100*a/b}')
    echo "| $s | ${RPS[$s]} | $pct | ${P50[$s]} | ${P99[$s]} |"
  done
  echo
  echo "hot_list_gzip sends Accept-Encoding: gzip (as Go's HTTP client, browsers and curl --compressed do) and gets the list precompressed."
  echo "Peak RSS of the serving node: $((RSS_HOT / 1024)) MB under hot load, $((RSS_COLD / 1024)) MB under cold load."
} | tee "$OUT"
