#!/usr/bin/env bash
# Measures cmd/serve's continuous batching against the slot engine it
# replaced (issue 26), side by side in one run, with the same load
# generator (bench/serveload): closed-loop clients, each sending
# requests of TOKENS tokens (200 by default) from the embedded model back
# to back, non-streamed and streamed.
#
# "before" is cmd/serve built from BEFORE, by default the parent of the
# commit that replaced the slot engine (checked out in a temporary
# worktree, removed at exit), at its default -slots (GOMAXPROCS: the
# generations that ran at once) and at -slots 32; "after" is this tree's
# cmd/serve with batches of 32 rows. Every server gets a queue of 64 and
# a 10-minute queue timeout, so that no request is refused. Each round
# starts each server afresh and runs, in turn, 32 clients (JSON, then
# streams) and 1 client; rounds are interleaved and the table gives
# medians, wall-clock and per CPU-second of the server process (the
# machine may be shared and noisy). The texts' checksum of every run must
# agree: the batches return what the slots returned.
#
#   bench/serve.sh                  # 5 rounds, about 5 minutes on 2 cores
#   ROUNDS=3 REQUESTS=2 bench/serve.sh
#   BEFORE=<commit> bench/serve.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
TOKENS=${TOKENS:-200}
REQUESTS=${REQUESTS:-6}     # per client at 32 clients
SINGLE=${SINGLE:-20}        # requests of the single client
BEFORE=${BEFORE:-$(git log -1 --format=%H -S'releaseSlot' -- server/slots.go)^}

tmp=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  git worktree remove --force "$tmp/before" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "before: $(git log -1 --format='%h %s' "$BEFORE" | cut -c1-100)"
echo "after:  $(git log -1 --format='%h %s' HEAD | cut -c1-100)$(git diff --quiet HEAD -- . || echo ' (and uncommitted changes)')"
git worktree add --detach -q "$tmp/before" "$BEFORE"
(cd "$tmp/before" && go build -o "$tmp/serve-before" ./cmd/serve)
go build -o "$tmp/serve-after" ./cmd/serve
go build -o "$tmp/serveload" ./bench/serveload

# The configurations: name, binary, -slots (the slot engine's default
# was GOMAXPROCS).
procs=$(getconf _NPROCESSORS_ONLN)
configs=("before-slots-default serve-before $procs" "before-slots-32 serve-before 32" "after-rows-32 serve-after 32")

start() { # start BINARY SLOTS: sets pid and url
  "$tmp/$1" -addr 127.0.0.1:0 -slots "$2" -queue 64 -queue-timeout 10m -request-timeout 10m >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  for _ in $(seq 100); do grep -q 'on http://' "$tmp/out" 2>/dev/null && break; sleep 0.1; done
  url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$tmp/out" | head -1 || true)
  if [ -z "$url" ]; then echo "cmd/serve did not start:"; cat "$tmp/err"; exit 1; fi
}
stop() { kill -TERM "$pid"; wait "$pid" || true; pid=; }
hz=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; } # the server's user + system time, in ticks

log=$tmp/results
for round in $(seq "$ROUNDS"); do
  for c in "${configs[@]}"; do
    read -r name bin slots <<<"$c"
    start "$bin" "$slots"
    for load in "json32 -clients 32 -requests $REQUESTS" "stream32 -clients 32 -requests $REQUESTS -stream" \
                "json1 -clients 1 -requests $SINGLE" "stream1 -clients 1 -requests $SINGLE -stream"; do
      read -r kind args <<<"$load"
      before_cpu=$(cpu)
      # shellcheck disable=SC2086
      line=$("$tmp/serveload" -url "$url" -tokens "$TOKENS" $args)
      used=$(awk -v a="$before_cpu" -v b="$(cpu)" -v hz="$hz" 'BEGIN {printf "%.2f", (b - a) / hz}')
      tokens=$(grep -o ' tokens=[0-9]*' <<<"$line" | cut -d= -f2)
      per_cpu=$(awk -v t="$tokens" -v c="$used" 'BEGIN {printf "%.0f", (c > 0) ? t / c : 0}')
      echo "round=$round config=$name load=$kind load_avg=$(cut -d' ' -f1 /proc/loadavg) $line server_cpu_s=$used tokens_per_cpu_s=$per_cpu" | tee -a "$log"
    done
    stop
  done
done

# Every run of a load returned the same texts, whatever the server.
for kind in json32 stream32 json1 stream1; do
  n=$(grep " load=$kind " "$log" | grep -o 'texts=[0-9a-f]*' | sort -u | wc -l)
  if [ "$n" != 1 ]; then echo "the texts differ between runs of $kind:"; grep " load=$kind " "$log"; exit 1; fi
done
echo "every run of each load returned the same texts (checksum agreed across servers and rounds)"

median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
med() { # med CONFIG LOAD FIELD
  grep " config=$1 load=$2 " "$log" | grep -o " $3=[0-9.]*" | cut -d= -f2 | median
}
echo
echo "Medians of $ROUNDS rounds, $TOKENS tokens per request, on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//') ($procs CPUs)."
echo "Ratios are after-rows-32 over each before configuration (latency: before over after, > 1 is faster)."
echo
printf '| load | metric | %s | %s | %s | after / before-default | after / before-32 |\n' before-slots-default before-slots-32 after-rows-32
echo '|---|---|---:|---:|---:|---:|---:|'
row() { # row LOAD FIELD LABEL HIGHER_IS_BETTER
  local a b c
  a=$(med before-slots-default "$1" "$2"); b=$(med before-slots-32 "$1" "$2"); c=$(med after-rows-32 "$1" "$2")
  awk -v l="$1" -v f="$3" -v a="$a" -v b="$b" -v c="$c" -v up="$4" 'BEGIN {
    if (up) { ra = c / a; rb = c / b } else { ra = a / c; rb = b / c }
    printf "| %s | %s | %s | %s | %s | %.2f× | %.2f× |\n", l, f, a, b, c, ra, rb }'
}
for kind in json32 stream32; do
  row $kind tokens_per_s "tokens/s" 1
  row $kind tokens_per_cpu_s "tokens per server CPU-s" 1
  row $kind p50_ms "p50 ms" 0
  row $kind p99_ms "p99 ms" 0
done
row stream32 ttft_p50_ms "first token p50 ms" 0
for kind in json1 stream1; do
  row $kind p50_ms "p50 ms" 0
  row $kind tokens_per_s "tokens/s" 1
  row $kind tokens_per_cpu_s "tokens per server CPU-s" 1
done
echo
echo "tokens per server CPU-s divides the generated tokens by the user + system time of the server process"
echo "during the load (from /proc): it does not depend on how much of the machine the server got."
echo "Load averages during the runs: $(grep -o 'load_avg=[0-9.]*' "$log" | cut -d= -f2 | sort -g | sed -n '1p;$p' | paste -sd- -)"
