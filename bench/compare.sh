#!/usr/bin/env bash
# Times minigpt against the references in bench/ (numpy_ref.py, the
# project's own NumPy implementation of the seed model, and torch_ref.py,
# PyTorch in float64 and float32) on this machine and prints the ratios,
# each row's GFLOP/s and its share of this machine's measured FMA peak
# (BenchmarkPeakFMA), then a scale table over four model sizes: seed
# (0.10M parameters), baby (0.82M), mid (3.2M) and nanoGPT's full
# Shakespeare-char shape at batch 4 (10.8M), at two cores and, per
# CPU-second, at one. Runs from a fresh clone.
# docs/performance.md explains every column.
#
# The references are measured at their best: OPENBLAS_CORETYPE and
# OPENBLAS_L2_SIZE are unset for them (some machines set these, pinning
# OpenBLAS to an older kernel), then each OpenBLAS kernel in CORETYPES is
# tried along with OpenBLAS's own choice, and the fastest kept. CORETYPES
# defaults to the fair references of the kernel path minigpt runs
# (bench/cpu.sh, on Intel and AMD): SkylakeX and Cooperlake on AVX-512
# (and Zen on AMD), Haswell on AVX2 (and Zen on AMD).
# MINIGPT_KERNELS=avx2 on an AVX-512 CPU times minigpt's AVX2 path against
# those AVX2 kernels only (OpenBLAS's own choice would be an AVX-512 one),
# with PyTorch's own loops capped to AVX2 too (ATEN_CPU_CAPABILITY) and
# the AVX2 FMA peak; PyTorch's
# thread settings (torch threads x OpenBLAS threads) are probed the same
# way, for float64 and float32 apart, at the baby config, and the OpenBLAS
# thread count probed again at the full config for the mid and full rows.
# The kernel that ran is printed (python3-threadpoolctl).
#
# The machine may be shared and noisy: after the probes, each side runs
# ROUNDS times (default 3), interleaved, and medians are compared.
# Needs /usr/bin/python3 with NumPy and, for the PyTorch rows, torch:
#   apt-get install -y python3-numpy python3-torch python3-threadpoolctl libopenblas0-pthread
# A missing reference is skipped.
#
#   bench/compare.sh                  # everything, about 10 minutes on 2 cores
#   MINIGPT_KERNELS=avx2 bench/compare.sh   # the AVX2 path, on any AVX2 or AVX-512 CPU
#   QUICK=1 bench/compare.sh          # a 2-minute look: one round, short runs,
#                                     # one reduced probe pass
#   ROUNDS=5 bench/compare.sh         # more rounds
#   NP_ENV="SkylakeX 1" TORCH_ENV="SkylakeX 1 2" TORCH32_ENV="SkylakeX 1 2" \
#   TORCH_FULL_ENV="SkylakeX 1 2" TORCH32_FULL_ENV="SkylakeX 1 2" bench/compare.sh
#                                     # skip the probes: OPENBLAS_CORETYPE
#                                     # (or auto) and thread counts given
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-/usr/bin/python3}
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then ROUNDS=${ROUNDS:-1}; else ROUNDS=${ROUNDS:-3}; fi
. bench/cpu.sh
CORETYPES=$REF_CORETYPES
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/results
start=$SECONDS

# steps FULL QUICK: a run's length, shorter with QUICK=1.
steps() { if [ "$QUICK" = 1 ]; then echo "$2"; else echo "$1"; fi; }

median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
metric() { # metric NAME: the number before NAME on the benchmark line
  awk -v m="$1" '/^Benchmark/ {for (i = 2; i <= NF; i++) if ($i == m) print $(i-1)}' | head -1
}
# ref CORETYPE CMD...: a reference command without the machine's OpenBLAS
# pins; CORETYPE "auto" leaves the kernel choice to OpenBLAS.
ref() {
  local ct=$1; shift
  if [ "$ct" = auto ]; then
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ${TORCH_CAP:+ATEN_CPU_CAPABILITY=$TORCH_CAP} "$@"
  else
    env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE="$ct" ${TORCH_CAP:+ATEN_CPU_CAPABILITY=$TORCH_CAP} "$@"
  fi
}
rate() { sed -nE "s|.* ([0-9.]+) $1.*|\1|p" | tail -1; }

cpu_describe
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$QUICK" = 1 ] && echo "QUICK=1: $ROUNDS round(s) of short runs, one reduced probe pass: a first look, not a measurement"

go test -c -o "$tmp/minigpt.test" .
go test -c -o "$tmp/kernels.test" ./internal/kernels # BenchmarkPeakFMA
gobench() { # gobench GOMAXPROCS PATTERN BENCHTIME
  GOMAXPROCS=$1 "$tmp/minigpt.test" -test.run '^$' -test.bench "$2" -test.benchtime "$3"
}

# This machine's peak: the best FMA loop, one core.
peak=$(cpu_peak "$tmp/kernels.test" "$(steps 25 5)")
[ -n "$peak" ] || echo "compare.sh: BenchmarkPeakFMA measured no peak (no assembly peak loop on this platform?): the % columns below are empty" >&2
echo "measured FMA peak: ${peak:-?} GFLOP/s per core (BenchmarkPeakFMA/${PEAK_ISA:-best ISA}, best of $(steps 25 5) short runs)"

have_numpy=1; $PY -c 'import numpy' 2>/dev/null || have_numpy=0
have_torch=1; $PY -c 'import torch' 2>/dev/null || have_torch=0

# Probes: the best OpenBLAS kernel and thread count for NumPy, the best
# thread settings for PyTorch. Short runs; the best setting is kept.
# NP_ENV="Cooperlake 2" or TORCH_ENV="Cooperlake 1 2" skip a probe.
# With QUICK=1: one pass, the first of CORETYPES and OpenBLAS's choice only.
passes="1 2"; auto=$([ "$REF_AUTO" = 1 ] && echo "auto " || true); cts="$auto$CORETYPES"
[ "$QUICK" = 1 ] && { passes=1; cts="$auto${CORETYPES%% *}"; }
np_env=${NP_ENV:-}; torch_env=${TORCH_ENV:-}; torch32_env=${TORCH32_ENV:-}
if [ $have_numpy = 1 ] && [ -z "$np_env" ]; then
  # Two passes over the settings, each setting's best kept: one short
  # run can land on a busy moment.
  best=0
  for pass in $passes; do
    for ct in $cts; do
      for th in 1 2; do
        s=$(ref "$ct" env OPENBLAS_NUM_THREADS=$th $PY bench/numpy_ref.py train 15 | tee "$tmp/out" | rate steps/s)
        echo "probe $pass numpy seed: OPENBLAS_CORETYPE=$ct OPENBLAS_NUM_THREADS=$th: $s steps/s ($(sed -n 's/.*BLAS: //p' "$tmp/out"))"
        if awk -v a="$s" -v b="$best" 'BEGIN {exit !(a > b)}'; then best=$s; np_env="$ct $th"; fi
      done
    done
  done
  echo "numpy best: OPENBLAS_CORETYPE / threads = $np_env"
fi
# probe_torch DTYPE LABEL: the best "CORETYPE TORCH_THREADS OPENBLAS_THREADS"
# for torch_ref.py at the baby config, on stdout; the probes on stderr.
probe_torch() {
  local dtype=$1 label=$2 best=0 setting="" pass ct tt s
  for pass in $passes; do
    for ct in $cts; do
      # torch's own threads (OpenMP) only with OpenBLAS's choice of
      # kernel: on two cores they fight OpenBLAS's threads and lose 3-10x.
      tts='"1 1" "1 2"'; [ "$ct" = auto ] && tts='"1 1" "1 2" "2 1" "2 2"'
      [ "$QUICK" = 1 ] && tts='"1 1" "1 2"'
      eval "set -- $tts"
      for tt in "$@"; do
        set -- $tt
        s=$(ref "$ct" env OPENBLAS_NUM_THREADS=$2 $PY bench/torch_ref.py --dtype "$dtype" --threads $1 --steps 4 --warmup 2 | tee "$tmp/out" | rate tokens/s)
        echo "probe $pass $label baby: OPENBLAS_CORETYPE=$ct torch threads $1, OpenBLAS threads $2: $s tokens/s ($(sed -n 's/.*BLAS: //p' "$tmp/out"))" >&2
        if awk -v a="$s" -v b="$best" 'BEGIN {exit !(a > b)}'; then best=$s; setting="$ct $1 $2"; fi
      done
    done
  done
  echo "$setting"
}
# probe_full DTYPE LABEL SETTING: SETTING's kernel and torch threads with
# one and two OpenBLAS threads at the full config (large products may
# want another count than the baby's), the faster on stdout.
probe_full() {
  local dtype=$1 label=$2 a=($3) best=0 setting="" pass th s
  for pass in $passes; do
    for th in 1 2; do
      s=$(ref "${a[0]}" env OPENBLAS_NUM_THREADS=$th $PY bench/torch_ref.py --config full --dtype "$dtype" --threads ${a[1]} --steps 2 --warmup 1 | rate tokens/s)
      echo "probe $pass $label full: OPENBLAS_CORETYPE=${a[0]} torch threads ${a[1]}, OpenBLAS threads $th: $s tokens/s" >&2
      if awk -v a="$s" -v b="$best" 'BEGIN {exit !(a > b)}'; then best=$s; setting="${a[0]} ${a[1]} $th"; fi
    done
  done
  echo "$setting"
}
if [ $have_torch = 1 ]; then
  if [ -z "$torch_env" ]; then
    torch_env=$(probe_torch float64 torch)
    echo "torch best: OPENBLAS_CORETYPE / torch threads / OpenBLAS threads = $torch_env"
  fi
  if [ -z "$torch32_env" ]; then
    torch32_env=$(probe_torch float32 "torch f32")
    echo "torch f32 best: OPENBLAS_CORETYPE / torch threads / OpenBLAS threads = $torch32_env"
  fi
  torch_full_env=${TORCH_FULL_ENV:-}; torch32_full_env=${TORCH32_FULL_ENV:-}
  if [ "$QUICK" = 1 ]; then
    torch_full_env=${torch_full_env:-$torch_env}; torch32_full_env=${torch32_full_env:-$torch32_env}
  fi
  if [ -z "$torch_full_env" ]; then
    torch_full_env=$(probe_full float64 "torch f64" "$torch_env")
  fi
  if [ -z "$torch32_full_env" ]; then
    torch32_full_env=$(probe_full float32 "torch f32" "$torch32_env")
  fi
  echo "torch at mid and full: f64 $torch_full_env, f32 $torch32_full_env (OPENBLAS_CORETYPE / torch threads / OpenBLAS threads)"
  for e in "$torch_env" "$torch32_env" "$torch_full_env" "$torch32_full_env"; do
    if [ -z "$e" ]; then echo "no PyTorch probe ran (see its errors above): the PyTorch rows are skipped"; have_torch=0; fi
  done
fi

numpy() { local a=($np_env); ref "${a[0]}" env OPENBLAS_NUM_THREADS=${a[1]} $PY bench/numpy_ref.py "$@"; }
# torchwith SETTING ARGS...: torch_ref.py at a "CORETYPE TORCH OPENBLAS" setting.
torchwith() { local a=($1); shift; ref "${a[0]}" env OPENBLAS_NUM_THREADS=${a[2]} $PY bench/torch_ref.py --threads ${a[1]} "$@"; }
torch() { torchwith "$torch_env" "$@"; }
# The same on one thread: no spinning helper threads, so their CPU time
# is their work, comparable with minigpt's on GOMAXPROCS=1 however busy
# the machine is.
numpy1() { local a=($np_env); ref "${a[0]}" env OPENBLAS_NUM_THREADS=1 $PY bench/numpy_ref.py "$@"; }
torch1() { local a=($torch_env); ref "${a[0]}" env OPENBLAS_NUM_THREADS=1 $PY bench/torch_ref.py --threads 1 "$@"; }
t32_1() { local a=($torch32_env); ref "${a[0]}" env OPENBLAS_NUM_THREADS=1 $PY bench/torch_ref.py --dtype float32 --threads 1 "$@"; }

: >"$log"
# timed KEY CMD...: CMD's rate (its last output line's steps/s), and the
# cores it kept busy on average ((user + system) / real, spinning
# OpenBLAS threads included), as "KEY rate" and "KEY_cores n"; and
# torch_ref.py's peak and starting resident memory as KEY_rss, KEY_rss0.
timed() {
  local key=$1; shift
  local TIMEFORMAT='%R %U %S' out t
  { time "$@" >"$tmp/out" 2>&1; } 2>"$tmp/time"
  out=$(rate steps/s <"$tmp/out")
  t=$(tail -1 "$tmp/time")
  echo "$key $out" >>"$log"
  awk -v k="$key" '{if ($1 > 0) printf "%s_cores %.2f\n", k, ($2 + $3) / $1}' <<<"$t" >>"$log"
  sed -nE "s|.*peak RSS ([0-9.]+) MiB \(([0-9.]+) MiB before.*|${key}_rss \1\n${key}_rss0 \2|p" "$tmp/out" | tail -2 >>"$log"
}
# gorow KEY GOMAXPROCS PATTERN BENCHTIME: the benchmark's steps/s and
# cores, and BenchmarkTrainStepScale's GFLOP per step and memory.
gorow() {
  gobench "$2" "$3" "$4" >"$tmp/out"
  echo "$1 $(metric steps/s <"$tmp/out")" >>"$log"
  echo "${1}_cores $(metric cores <"$tmp/out")" >>"$log"
  echo "${1}_gflop $(awk '/^Benchmark/ {for (i = 2; i <= NF; i++) {if ($i == "GFLOP/s") g = $(i-1); if ($i == "steps/s") s = $(i-1)}} END {if (s > 0) print g / s}' "$tmp/out")" >>"$log"
  for m in peak-RSS-MiB B/token est-B/token heap-MiB est-MiB; do
    echo "${1}_$m $(metric "$m" <"$tmp/out")" >>"$log"
  done
}
scale() { echo "^BenchmarkTrainStepScale/$1\$"; }
for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS (load $(cut -d' ' -f1 /proc/loadavg), $((SECONDS - start)) s in)" >&2
  for p in 2 1; do
    gorow go_seed_$p $p "$(scale seed)" "$(steps 60 30)x"
    gorow go_baby_$p $p "$(scale baby)" "$(steps 15 8)x"
  done
  gorow go_mid_2 2 "$(scale mid)" "$(steps 10 4)x"
  gorow go_full_2 2 "$(scale full)" "$(steps 5 2)x"
  if [ "$QUICK" != 1 ]; then
    gorow go_mid_1 1 "$(scale mid)" 5x
    gorow go_full_1 1 "$(scale full)" 3x
  fi
  echo "go_decode $(gobench 2 '^BenchmarkGenerate/greedy/cached$' 3x | metric tokens/s)" >>"$log"
  if [ $have_numpy = 1 ]; then
    timed np1_seed numpy1 train "$(steps 60 30)"
    timed np1_baby numpy1 train "$(steps 10 5)" --config baby
    timed np_seed numpy train "$(steps 60 30)"
    timed np_baby numpy train "$(steps 10 5)" --config baby
    echo "np_decode $(numpy generate 1000 | rate tokens/s)" >>"$log"
  fi
  if [ $have_torch = 1 ]; then
    timed torch1_seed torch1 --config seed --steps "$(steps 60 30)"
    timed torch1_baby torch1 --steps "$(steps 20 10)"
    timed torch_seed torch --config seed --steps "$(steps 60 30)"
    timed torch_baby torch --steps "$(steps 30 15)"
    timed torch_mid torchwith "$torch_full_env" --config mid --steps "$(steps 10 4)" --warmup 2
    timed torch_full torchwith "$torch_full_env" --config full --steps "$(steps 4 2)" --warmup 2
    timed t32_seed torchwith "$torch32_env" --dtype float32 --config seed --steps "$(steps 60 30)"
    timed t32_baby torchwith "$torch32_env" --dtype float32 --steps "$(steps 30 15)"
    timed t32_mid torchwith "$torch32_full_env" --dtype float32 --config mid --steps "$(steps 15 6)" --warmup 2
    timed t32_full torchwith "$torch32_full_env" --dtype float32 --config full --steps "$(steps 6 3)" --warmup 2
    if [ "$QUICK" != 1 ]; then
      timed torch1_mid torch1 --config mid --steps 6 --warmup 2
      timed torch1_full torch1 --config full --steps 3 --warmup 2
      timed t32_1_seed t32_1 --config seed --steps 60
      timed t32_1_baby t32_1 --steps 20
      timed t32_1_mid t32_1 --config mid --steps 10 --warmup 2
      timed t32_1_full t32_1 --config full --steps 4 --warmup 2
    fi
  fi
done
# One to two threads, both back to back in one process (BenchmarkTwoThreads):
# the host's drift between the separate runs above cancels out here.
pairs=$(steps 15 4)
gobench 2 '^BenchmarkTwoThreads$' "${pairs}x" | awk '/^Benchmark/ {for (i = 2; i <= NF; i++) {if ($i == "speedup") s = $(i-1); if ($i == "ms/step-1") a = $(i-1); if ($i == "ms/step-2") b = $(i-1)}; sub(/-[0-9]+$/, "", $1); printf "two_threads %s %s %s %s\n", $1, s, a, b}' >"$tmp/two"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

get() { awk -v k="$1" '$1 == k && $2 != "" {print $2}' "$log" | median; }
seed_gflop=$(get go_seed_1_gflop); baby_gflop=$(get go_baby_1_gflop)
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
  printf "%-40s %.2fx  (%s ms -> %s ms per step, median of %s paired rounds in one process)\n" "${name#BenchmarkTwoThreads/}: 1 -> 2 threads, paired" "$s" "$a" "$b" "$pairs"
done <"$tmp/two"
d=$(get go_decode); n=$(get np_decode)
[ -n "$d" ] && echo "greedy decoding, 1000 tokens: minigpt $d tokens/s${n:+, NumPy (no cache) $n tokens/s, $(awk -v a="$d" -v b="$n" 'BEGIN {printf "%.1f", a / b}')x}"

# The scale table: every size, minigpt at GOMAXPROCS=2 and each reference
# at its best setting, with the FLOPs of minigpt's count (the same model)
# for all of them.
sizes="seed baby mid full"
declare -A shape=([seed]="2/4/64/32/32 V24" [baby]="4/4/128/64/12 V65" [mid]="4/4/256/128/8 V65" [full]="6/6/384/256/4 V65")
declare -A tokens=([seed]=1024 [baby]=768 [mid]=1024 [full]=1024)
declare -A params=([seed]=0.10M [baby]=0.82M [mid]=3.22M [full]=10.79M)
# srow SIZE LABEL KEY PEAK_FACTOR: one line of the table; PEAK_FACTOR is
# the row's own peak over the FP64 peak (2 for float32's twice as many
# lanes per FMA).
srow() {
  local v rss bpt f k; v=$(get "$3"); f=$(get "go_${1}_2_gflop"); k=$(get "${3}_cores")
  [ -z "$v" ] && return
  rss=$(get "${3}_rss"); [ -z "$rss" ] && rss=$(get "${3}_peak-RSS-MiB")
  bpt=$(get "${3}_B/token")
  awk -v s="$1" -v sh="${shape[$1]}" -v pm="${params[$1]}" -v l="$2" -v v="$v" -v t="${tokens[$1]}" -v f="${f:-0}" \
    -v p="${peak:-0}" -v x="$4" -v rss="$rss" -v bpt="$bpt" -v k="$k" 'BEGIN {
    g = v * f; pc = (p > 0 ? 100 * g / (2 * p) : 0)
    printf "%-5s %-7s %-18s %-34s %9.2f %10.0f %8.1f %8.1f%% %8.1f%% %9s %10s %6s\n", s, pm, sh, l, v, v * t, g, pc, pc / x,
      (rss != "" ? sprintf("%.0f", rss) : "-"), (bpt != "" ? sprintf("%.0f", bpt) : "-"), (k != "" ? sprintf("%.2f%s", k, k < 1.8 ? "*" : "") : "-") }'
}
echo
echo "scale table: medians of $ROUNDS interleaved rounds, two cores each (minigpt GOMAXPROCS=2, the"
echo "references at their probed settings: OPENBLAS_CORETYPE / torch threads / OpenBLAS threads);"
echo "shape: layers/heads/width/block/batch and vocabulary; GFLOP/s: the model's FLOPs per step"
echo "(BenchmarkTrainStepScale's count, the same for every side) times steps/s; % of the two cores'"
echo "measured FP64 peak (2 x ${peak:-?} GFLOP/s), and of the row's own peak (float32: twice FP64);"
echo "peak RSS: the process's, MiB; act B/token: minigpt's activation and gradient bytes per token;"
echo "cores: CPU time / wall time (below 2, other processes had part of the machine)."
printf "%-5s %-7s %-18s %-34s %9s %10s %8s %9s %9s %9s %10s %6s\n" size params shape implementation steps/s tokens/s GFLOP/s "FP64 pk" "own pk" "RSS MiB" "act B/tok" cores
for s in $sizes; do
  case $s in seed|baby) te=$torch_env; t32=$torch32_env ;; *) te=${torch_full_env:-}; t32=${torch32_full_env:-} ;; esac
  srow "$s" "minigpt f64" "go_${s}_2" 1
  srow "$s" "PyTorch f32 (${t32:-})" "t32_$s" 2
  srow "$s" "PyTorch f64 (${te:-})" "torch_$s" 1
  srow "$s" "NumPy f64 (${np_env:-})" "np_$s" 1
done | tee "$tmp/table"
grep -q '\*$' "$tmp/table" && echo "* below 1.8 busy cores: the row's setting runs one thread (its probe found that fastest), or other
  processes had part of the machine; for the code rather than the machine, see the per-CPU-second table."
r0=$(get torch_full_rss0); r1=$(get t32_full_rss0)
[ -n "$r0$r1" ] && echo "(PyTorch's RSS includes its runtime: ${r1:-?} MiB (f32) and ${r0:-?} MiB (f64) resident before the first step at full.)"
echo
echo "scale ratios of medians (tokens/s), and minigpt's 1 -> 2 threads from BenchmarkTwoThreads (paired):"
printf "%-5s %22s %22s %22s\n" size "minigpt / PyTorch f32" "minigpt / PyTorch f64" "minigpt 1 -> 2 cores"
for s in $sizes; do
  sp=$(awk -v n="BenchmarkTwoThreads/$s" '$2 == n {print $3}' "$tmp/two")
  awk -v s="$s" -v g="$(get "go_${s}_2")" -v a="$(get "t32_$s")" -v b="$(get "torch_$s")" -v sp="$sp" 'BEGIN {
    x = (g != "" && a != "") ? sprintf("%.2fx", g / a) : "-"; y = (g != "" && b != "") ? sprintf("%.2fx", g / b) : "-"
    printf "%-5s %22s %22s %22s\n", s, x, y, (sp != "" ? sprintf("%.2fx", sp) : "-") }'
done
echo
echo "scale, one thread each, per CPU-second (rate / busy cores: robust to other processes; minigpt at"
echo "GOMAXPROCS=1, the references with one torch and one OpenBLAS thread), and minigpt's share of one core's peak:"
printf "%-5s %14s %14s %14s %12s %12s %14s\n" size "minigpt" "PyTorch f32" "PyTorch f64" "/ f32" "/ f64" "minigpt % pk"
for s in $sizes; do
  g=$(get "go_${s}_1"); gk=$(get "go_${s}_1_cores"); a=$(get "t32_1_$s"); ak=$(get "t32_1_${s}_cores")
  b=$(get "torch1_$s"); bk=$(get "torch1_${s}_cores"); f=$(get "go_${s}_1_gflop")
  [ -z "$g" ] && continue
  awk -v s="$s" -v g="$g" -v gk="$gk" -v a="$a" -v ak="$ak" -v b="$b" -v bk="$bk" -v f="${f:-0}" -v p="${peak:-0}" '
    function per(v, k) { return (v != "" && k > 0) ? v / k : "" }
    function cell(x) { return x != "" ? sprintf("%.2f", x) : "-" }
    BEGIN {
      x = per(g, gk); y = per(a, ak); z = per(b, bk)
      printf "%-5s %14s %14s %14s %12s %12s %13s%%\n", s, cell(x), cell(y), cell(z),
        (x != "" && y != "") ? sprintf("%.2fx", x / y) : "-", (x != "" && z != "") ? sprintf("%.2fx", x / z) : "-",
        (x != "" && p > 0) ? sprintf("%.1f", 100 * x * f / p) : "-" }'
done
echo
echo "minigpt memory per size: activations from its buffers against Config.activationFloats, and the"
echo "live heap a trainer adds against NewTrainer's estimate (trainingBytes), from BenchmarkTrainStepScale:"
printf "%-5s %12s %12s %12s %12s %12s\n" size "act B/tok" "est B/tok" "heap MiB" "est MiB" "peak RSS"
for s in $sizes; do
  k=go_${s}_2
  [ -z "$(get "$k")" ] && continue
  printf "%-5s %12s %12s %12s %12s %12s\n" "$s" "$(get "${k}_B/token")" "$(get "${k}_est-B/token")" "$(get "${k}_heap-MiB")" "$(get "${k}_est-MiB")" "$(get "${k}_peak-RSS-MiB")"
done
echo "compare.sh took $((SECONDS - start)) s"
