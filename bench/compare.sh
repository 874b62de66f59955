#!/usr/bin/env bash
# Times minigpt against the references in bench/ (numpy_ref.py, the
# project's own NumPy implementation of the seed model, and torch_baby.py,
# PyTorch float64) on this machine and prints the ratios, each row's
# GFLOP/s and its share of this machine's measured FMA peak
# (BenchmarkPeakFMA). Runs from a fresh clone.
#
# The references are measured at their best: OPENBLAS_CORETYPE and
# OPENBLAS_L2_SIZE are unset for them (some machines set these, pinning
# OpenBLAS to an older kernel), then each OpenBLAS kernel in CORETYPES is
# tried along with OpenBLAS's own choice, and the fastest kept; PyTorch's
# thread settings (torch threads x OpenBLAS threads) are probed the same
# way. The kernel that ran is printed (python3-threadpoolctl).
#
# The machine may be shared and noisy: after the probes, each side runs
# ROUNDS times (default 3), interleaved, and medians are compared.
# Needs /usr/bin/python3 with NumPy and, for the PyTorch rows, torch:
#   apt-get install -y python3-numpy python3-torch python3-threadpoolctl libopenblas0-pthread
# A missing reference is skipped.
#
#   bench/compare.sh                  # everything
#   ROUNDS=5 bench/compare.sh         # more rounds
#   NP_ENV="SkylakeX 1" TORCH_ENV="SkylakeX 1 2" bench/compare.sh
#                                     # skip the probes: OPENBLAS_CORETYPE
#                                     # (or auto) and thread counts given
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-/usr/bin/python3}
ROUNDS=${ROUNDS:-3}
CORETYPES=${CORETYPES:-"SkylakeX Cooperlake Haswell"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/results

median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
metric() { # metric NAME: the number before NAME on the benchmark line
  awk -v m="$1" '/^Benchmark/ {for (i = 2; i <= NF; i++) if ($i == m) print $(i-1)}' | head -1
}
# ref CORETYPE CMD...: a reference command without the machine's OpenBLAS
# pins; CORETYPE "auto" leaves the kernel choice to OpenBLAS.
ref() {
  local ct=$1; shift
  if [ "$ct" = auto ]; then
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$@"
  else
    env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE="$ct" "$@"
  fi
}
rate() { sed -nE "s|.* ([0-9.]+) $1.*|\1|p" | tail -1; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "$(grep -qw avx512f /proc/cpuinfo && echo AVX-512 || echo 'no AVX-512'), $(go version | cut -d' ' -f3-)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

go test -c -o "$tmp/minigpt.test" .
gobench() { # gobench GOMAXPROCS PATTERN BENCHTIME
  GOMAXPROCS=$1 "$tmp/minigpt.test" -test.run '^$' -test.bench "$2" -test.benchtime "$3"
}

# This machine's peak: the best FMA loop, one core.
peak=$(for r in $(seq 25); do "$tmp/minigpt.test" -test.run '^$' -test.bench 'BenchmarkPeakFMA' -test.benchtime 100x |
  awk '/^Benchmark/ {for (i = 2; i <= NF; i++) if ($i == "GFLOP/s") print $(i-1)}'; done | sort -g | tail -1)
echo "measured FMA peak: ${peak:-?} GFLOP/s per core (BenchmarkPeakFMA, best ISA, best of 25 short runs)"

# FLOPs of one step of each config, from the Go benchmark's own count.
flops() { gobench 1 "$1" 2x | awk '/^Benchmark/ {for (i = 2; i <= NF; i++) {if ($i == "GFLOP/s") g = $(i-1); if ($i == "steps/s") s = $(i-1)}} END {print g / s}'; }
seed_gflop=$(flops '^BenchmarkTrainStep$')
baby_gflop=$(flops '^BenchmarkTrainStepBaby$')

have_numpy=1; $PY -c 'import numpy' 2>/dev/null || have_numpy=0
have_torch=1; $PY -c 'import torch' 2>/dev/null || have_torch=0

# Probes: the best OpenBLAS kernel and thread count for NumPy, the best
# thread settings for PyTorch. Short runs; the best setting is kept.
# NP_ENV="Cooperlake 2" or TORCH_ENV="Cooperlake 1 2" skip a probe.
np_env=${NP_ENV:-}; torch_env=${TORCH_ENV:-}
if [ $have_numpy = 1 ] && [ -z "$np_env" ]; then
  # Two passes over the settings, each setting's best kept: one short
  # run can land on a busy moment.
  best=0
  for pass in 1 2; do
    for ct in auto $CORETYPES; do
      for th in 1 2; do
        s=$(ref "$ct" env OPENBLAS_NUM_THREADS=$th $PY bench/numpy_ref.py train 15 | tee "$tmp/out" | rate steps/s)
        echo "probe $pass numpy seed: OPENBLAS_CORETYPE=$ct OPENBLAS_NUM_THREADS=$th: $s steps/s ($(sed -n 's/.*BLAS: //p' "$tmp/out"))"
        if awk -v a="$s" -v b="$best" 'BEGIN {exit !(a > b)}'; then best=$s; np_env="$ct $th"; fi
      done
    done
  done
  echo "numpy best: OPENBLAS_CORETYPE / threads = $np_env"
fi
if [ $have_torch = 1 ] && [ -z "$torch_env" ]; then
  best=0
  cts="auto $CORETYPES"
  for pass in 1 2; do
    for ct in $cts; do
      # torch's own threads (OpenMP) only with OpenBLAS's choice of
      # kernel: on two cores they fight OpenBLAS's threads and lose 3-10x.
      tts='"1 1" "1 2"'; [ "$ct" = auto ] && tts='"1 1" "1 2" "2 1" "2 2"'
      eval "set -- $tts"
      for tt in "$@"; do
        set -- $tt
        s=$(ref "$ct" env OPENBLAS_NUM_THREADS=$2 $PY bench/torch_baby.py --threads $1 --steps 4 --warmup 2 | tee "$tmp/out" | rate tokens/s)
        echo "probe $pass torch baby: OPENBLAS_CORETYPE=$ct torch threads $1, OpenBLAS threads $2: $s tokens/s ($(sed -n 's/.*BLAS: //p' "$tmp/out"))"
        if awk -v a="$s" -v b="$best" 'BEGIN {exit !(a > b)}'; then best=$s; torch_env="$ct $1 $2"; fi
      done
    done
  done
  echo "torch best: OPENBLAS_CORETYPE / torch threads / OpenBLAS threads = $torch_env"
fi

numpy() { local a=($np_env); ref "${a[0]}" env OPENBLAS_NUM_THREADS=${a[1]} $PY bench/numpy_ref.py "$@"; }
torch() { local a=($torch_env); ref "${a[0]}" env OPENBLAS_NUM_THREADS=${a[2]} $PY bench/torch_baby.py --threads ${a[1]} "$@"; }
# The same on one thread: no spinning helper threads, so their CPU time
# is their work, comparable with minigpt's on GOMAXPROCS=1 however busy
# the machine is.
numpy1() { local a=($np_env); ref "${a[0]}" env OPENBLAS_NUM_THREADS=1 $PY bench/numpy_ref.py "$@"; }
torch1() { local a=($torch_env); ref "${a[0]}" env OPENBLAS_NUM_THREADS=1 $PY bench/torch_baby.py --threads 1 "$@"; }

: >"$log"
# timed KEY CMD...: CMD's rate (its last output line's steps/s), and the
# cores it kept busy on average ((user + system) / real, spinning
# OpenBLAS threads included), as "KEY rate" and "KEY_cores n".
timed() {
  local key=$1; shift
  local TIMEFORMAT='%R %U %S' out t
  { time "$@" >"$tmp/out" 2>&1; } 2>"$tmp/time"
  out=$(rate steps/s <"$tmp/out")
  t=$(tail -1 "$tmp/time")
  echo "$key $out" >>"$log"
  awk -v k="$key" '{if ($1 > 0) printf "%s_cores %.2f\n", k, ($2 + $3) / $1}' <<<"$t" >>"$log"
}
gorow() { # gorow KEY GOMAXPROCS PATTERN BENCHTIME
  gobench "$2" "$3" "$4" >"$tmp/out"
  echo "$1 $(metric steps/s <"$tmp/out")" >>"$log"
  echo "${1}_cores $(metric cores <"$tmp/out")" >>"$log"
}
for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS (load $(cut -d' ' -f1 /proc/loadavg))" >&2
  for p in 2 1; do
    gorow go_seed_$p $p '^BenchmarkTrainStep$' 60x
    gorow go_baby_$p $p '^BenchmarkTrainStepBaby$' 15x
  done
  echo "go_decode $(gobench 2 '^BenchmarkGenerate/greedy/cached$' 3x | metric tokens/s)" >>"$log"
  if [ $have_numpy = 1 ]; then
    timed np1_seed numpy1 train 60
    timed np1_baby numpy1 train 10 --config baby
    timed np_seed numpy train 60
    timed np_baby numpy train 10 --config baby
    echo "np_decode $(numpy generate 1000 | rate tokens/s)" >>"$log"
  fi
  if [ $have_torch = 1 ]; then
    timed torch1_seed torch1 --config seed --steps 60
    timed torch1_baby torch1 --steps 20
    timed torch_seed torch --config seed --steps 60
    timed torch_baby torch --steps 30
  fi
done
# One to two threads, both back to back in one process (BenchmarkTwoThreads):
# the host's drift between the separate runs above cancels out here.
gobench 2 '^BenchmarkTwoThreads$' 15x | awk '/^Benchmark/ {for (i = 2; i <= NF; i++) {if ($i == "speedup") s = $(i-1); if ($i == "ms/step-1") a = $(i-1); if ($i == "ms/step-2") b = $(i-1)}; sub(/-[0-9]+$/, "", $1); printf "two_threads %s %s %s %s\n", $1, s, a, b}' >"$tmp/two"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

get() { awk -v k="$1" '$1 == k && $2 != "" {print $2}' "$log" | median; }
# row LABEL KEY CORES GFLOP_PER_STEP: rate, GFLOP/s, % of the cores' peak.
row() {
  local v k; v=$(get "$2"); k=$(get "${2}_cores")
  [ -z "$v" ] && return
  awk -v l="$1" -v v="$v" -v c="$3" -v f="$4" -v p="${peak:-0}" -v k="${k:-?}" 'BEGIN {
    g = v * f; printf "%-40s %10.2f steps/s %8.1f GFLOP/s %6.1f%% of %d-core peak   busy cores %s\n", l, v, g, (p > 0 ? 100 * g / (p * c) : 0), c, k }'
}
# cpurow LABEL KEY GFLOP_PER_STEP: a one-thread run's rate per CPU-second
# (rate / busy cores), its GFLOP per CPU-second and share of one core's
# peak: what the code does with the CPU time it gets.
cpurow() {
  local v k; v=$(get "$2"); k=$(get "${2}_cores")
  [ -z "$v" ] || [ -z "$k" ] && return
  awk -v l="$1" -v v="$v" -v k="$k" -v f="$3" -v p="${peak:-0}" 'BEGIN {
    r = v / k; g = r * f; printf "%-40s %10.2f steps per CPU-s %8.1f GFLOP per CPU-s %6.1f%% of 1-core peak\n", l, r, g, (p > 0 ? 100 * g / p : 0) }'
  echo "cpu_$2 $(awk -v v="$v" -v k="$k" 'BEGIN {print v / k}')" >>"$log"
}
ratio() { # ratio LABEL KEY_A KEY_B
  local a b; a=$(get "$2"); b=$(get "$3")
  [ -n "$a" ] && [ -n "$b" ] && awk -v l="$1" -v a="$a" -v b="$b" 'BEGIN {printf "%-40s %.2fx\n", l, a / b}'
  return 0
}
echo
echo "medians of $ROUNDS interleaved rounds (seed: $seed_gflop GFLOP/step; baby: $baby_gflop GFLOP/step)."
echo "busy cores: CPU time / wall time, the median over the rounds; below the thread count, other"
echo "processes had the rest of the machine (for the references it counts OpenBLAS threads spinning):"
row "minigpt seed, 2 cores" go_seed_2 2 "$seed_gflop"
row "minigpt seed, 1 core" go_seed_1 1 "$seed_gflop"
row "NumPy seed ($np_env)" np_seed 2 "$seed_gflop"
row "PyTorch f64 seed ($torch_env)" torch_seed 2 "$seed_gflop"
row "minigpt baby, 2 cores" go_baby_2 2 "$baby_gflop"
row "minigpt baby, 1 core" go_baby_1 1 "$baby_gflop"
row "NumPy baby ($np_env)" np_baby 2 "$baby_gflop"
row "PyTorch f64 baby ($torch_env)" torch_baby 2 "$baby_gflop"
echo
echo "one thread each, per CPU-second (robust to other processes):"
cpurow "minigpt seed, GOMAXPROCS=1" go_seed_1 "$seed_gflop"
cpurow "NumPy seed, 1 thread" np1_seed "$seed_gflop"
cpurow "PyTorch f64 seed, 1 thread" torch1_seed "$seed_gflop"
cpurow "minigpt baby, GOMAXPROCS=1" go_baby_1 "$baby_gflop"
cpurow "NumPy baby, 1 thread" np1_baby "$baby_gflop"
cpurow "PyTorch f64 baby, 1 thread" torch1_baby "$baby_gflop"
cpurow "minigpt seed, GOMAXPROCS=2" go_seed_2 "$seed_gflop"
cpurow "minigpt baby, GOMAXPROCS=2" go_baby_2 "$baby_gflop"
echo
echo "ratios of medians:"
ratio "seed: minigpt / NumPy" go_seed_2 np_seed
ratio "seed: minigpt / PyTorch" go_seed_2 torch_seed
ratio "baby: minigpt / PyTorch" go_baby_2 torch_baby
ratio "baby: minigpt / NumPy" go_baby_2 np_baby
ratio "seed: 1 -> 2 cores (wall)" go_seed_2 go_seed_1
ratio "baby: 1 -> 2 cores (wall)" go_baby_2 go_baby_1
ratio "seed, per CPU-s: minigpt / NumPy" cpu_go_seed_1 cpu_np1_seed
ratio "seed, per CPU-s: minigpt / PyTorch" cpu_go_seed_1 cpu_torch1_seed
ratio "baby, per CPU-s: minigpt / NumPy" cpu_go_baby_1 cpu_np1_baby
ratio "baby, per CPU-s: minigpt / PyTorch" cpu_go_baby_1 cpu_torch1_baby
ratio "seed, per CPU-s: 2 threads / 1" cpu_go_seed_2 cpu_go_seed_1
ratio "baby, per CPU-s: 2 threads / 1" cpu_go_baby_2 cpu_go_baby_1
while read -r _ name s a b; do
  printf "%-40s %.2fx  (%s ms -> %s ms per step, median of 15 paired rounds in one process)\n" "${name#BenchmarkTwoThreads/}: 1 -> 2 threads, paired" "$s" "$a" "$b"
done <"$tmp/two"
d=$(get go_decode); n=$(get np_decode)
[ -n "$d" ] && echo "greedy decoding, 1000 tokens: minigpt $d tokens/s${n:+, NumPy (no cache) $n tokens/s, $(awk -v a="$d" -v b="$n" 'BEGIN {printf "%.1f", a / b}')x}"
