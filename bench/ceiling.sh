#!/usr/bin/env bash
# How fast a float64 training step could be on this machine: one step's
# matrix products (BenchmarkStepProducts, bench/gemm_ref.py) timed on one
# thread through minigpt's kernels, OpenBLAS's dgemm and OpenBLAS's sgemm,
# beside whole training steps of minigpt and PyTorch (float32 and
# float64) on two cores, interleaved in one run. From them, ceilings: the
# steps/s of a step made of nothing but its products, run on both cores
# with perfect scaling at dgemm's speed (the best float64 BLAS here), or
# at the FMA peak (BenchmarkPeakFMA). A dgemm ceiling below PyTorch
# float32's measured step says a float64 step passes it only with
# products faster than OpenBLAS's, however its attention, LayerNorm and
# optimizer are written. Runs from a fresh clone; docs/performance.md
# shows a run.
#
#   bench/ceiling.sh               # full config, 5 rounds, about 4 minutes
#   SIZE=baby ROUNDS=3 bench/ceiling.sh
#   CORETYPE=Haswell TORCH32_ENV="Haswell 1 2" bench/ceiling.sh
#
# CORETYPE is the OpenBLAS kernel for the products (default SkylakeX on
# AVX-512, else Haswell); TORCH32_ENV and TORCH_ENV are PyTorch's
# settings, "CORETYPE TORCH_THREADS OPENBLAS_THREADS" as in compare.sh
# (default "Cooperlake 1 2" and "SkylakeX 1 2", what compare.sh's probes
# chose on the 2-vCPU Xeon on 2026-12-01). OPENBLAS_CORETYPE and
# OPENBLAS_L2_SIZE are unset for the references, as in compare.sh. Needs /usr/bin/python3 with NumPy,
# threadpoolctl and torch (see compare.sh); a missing one is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-/usr/bin/python3}
SIZE=${SIZE:-full}
ROUNDS=${ROUNDS:-5}
case $SIZE in seed|baby|mid|full) ;; *) echo "ceiling.sh: SIZE must be seed, baby, mid or full, not $SIZE" >&2; exit 2 ;; esac
case $ROUNDS in ''|*[!0-9]*|0) echo "ceiling.sh: ROUNDS must be a whole number of at least 1, not '$ROUNDS'" >&2; exit 2 ;; esac
if [ -z "${CORETYPE:-}" ]; then
  if grep -qw avx512f /proc/cpuinfo; then CORETYPE=SkylakeX; else CORETYPE=Haswell; fi
fi
TORCH32_ENV=${TORCH32_ENV:-"Cooperlake 1 2"}
TORCH_ENV=${TORCH_ENV:-"SkylakeX 1 2"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/results
: >"$log"

ref() { # ref CORETYPE CMD...: as compare.sh's
  local ct=$1; shift
  if [ "$ct" = auto ]; then
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$@"
  else
    env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE="$ct" "$@"
  fi
}
metric() { awk -v m="$1" '/^Benchmark/ {for (i = 2; i <= NF; i++) if ($i == m) print $(i-1)}' | head -1; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
get() { awk -v k="$1" '$1 == k && $2 != "" {print $2}' "$log" | median; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "$(grep -qw avx512f /proc/cpuinfo && echo AVX-512 || echo 'no AVX-512'), $(go version | cut -d' ' -f3-)"
go test -c -o "$tmp/minigpt.test" .
go test -c -o "$tmp/kernels.test" ./internal/kernels
peak=$(for r in $(seq 15); do "$tmp/kernels.test" -test.run '^$' -test.bench 'BenchmarkPeakFMA' -test.benchtime 100x |
  awk '/^Benchmark/ {for (i = 2; i <= NF; i++) if ($i == "GFLOP/s") print $(i-1)}'; done | sort -g | tail -1)
echo "FMA peak: ${peak:-?} GFLOP/s per core (BenchmarkPeakFMA, best ISA, best of 15)"

have_numpy=1; $PY -c 'import numpy' 2>/dev/null || { have_numpy=0; echo "no NumPy for $PY: the BLAS rows are skipped"; }
have_torch=1; $PY -c 'import torch' 2>/dev/null || { have_torch=0; echo "no torch for $PY: the PyTorch rows are skipped"; }
torchwith() { local a=($1); shift; ref "${a[0]}" env OPENBLAS_NUM_THREADS=${a[2]} $PY bench/torch_ref.py --threads ${a[1]} --config "$SIZE" "$@"; }
steprate() { sed -nE 's|.* ([0-9.]+) steps/s.*|\1|p' | tail -1; }

for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS (load $(cut -d' ' -f1 /proc/loadavg))" >&2
  GOMAXPROCS=1 "$tmp/minigpt.test" -test.run '^$' -test.bench "^BenchmarkStepProducts/$SIZE\$" -test.benchtime 2x >"$tmp/out"
  echo "go_products $(metric ms/step <"$tmp/out")" >>"$log"
  echo "go_gflop $(metric GFLOP/s <"$tmp/out")" >>"$log"
  if [ $have_numpy = 1 ]; then
    for dt in float64 float32; do
      ref "$CORETYPE" $PY bench/gemm_ref.py --config "$SIZE" --dtype $dt --rounds 2 >"$tmp/out"
      sed -n 's/^BLAS: //p' "$tmp/out" >"$tmp/blas_$dt"
      echo "blas_$dt $(sed -nE 's|.*median ([0-9.]+) ms/step.*|\1|p' "$tmp/out")" >>"$log"
      echo "blas_gflop $(sed -nE 's|.* ([0-9.]+) GFLOP, threads.*|\1|p' "$tmp/out")" >>"$log"
    done
  fi
  GOMAXPROCS=2 "$tmp/minigpt.test" -test.run '^$' -test.bench "^BenchmarkTrainStepScale/$SIZE\$" -test.benchtime 3x >"$tmp/out"
  echo "go_step $(metric steps/s <"$tmp/out")" >>"$log"
  echo "go_step_gflop $(awk '/^Benchmark/ {for (i = 2; i <= NF; i++) {if ($i == "GFLOP/s") g = $(i-1); if ($i == "steps/s") s = $(i-1)}} END {if (s > 0) print g / s}' "$tmp/out")" >>"$log"
  if [ $have_torch = 1 ]; then
    echo "t32_step $(torchwith "$TORCH32_ENV" --dtype float32 --steps 3 --warmup 1 | steprate)" >>"$log"
    echo "t64_step $(torchwith "$TORCH_ENV" --dtype float64 --steps 2 --warmup 1 | steprate)" >>"$log"
  fi
done

gp=$(get go_products); gf=$(get go_gflop); b64=$(get blas_float64); b32=$(get blas_float32)
gs=$(get go_step); sf=$(get go_step_gflop); t32=$(get t32_step); t64=$(get t64_step)
if [ -z "$gp" ] || [ -z "$gf" ]; then
  echo "ceiling.sh: BenchmarkStepProducts/$SIZE printed no ms/step or GFLOP/s: no ceiling to compute" >&2
  exit 1
fi
# The product list's GFLOP, from minigpt's run: ms/step x GFLOP/s.
pf=$(awk -v m="$gp" -v g="$gf" 'BEGIN {print m * g / 1e3}')
bf=$(get blas_gflop)
# The two lists are written twice (stepProducts, step_products): their FLOPs must agree.
if [ -n "$bf" ] && ! awk -v a="$pf" -v b="$bf" 'BEGIN {exit !(a / b > 0.99 && a / b < 1.01)}'; then
  echo "ceiling.sh: BenchmarkStepProducts counts $pf GFLOP a step, gemm_ref.py $bf: the lists differ" >&2
  exit 1
fi
echo
echo "$SIZE: one step's matrix products ($pf GFLOP; the whole step counts $sf), one thread, medians of $ROUNDS rounds:"
prow() { # prow LABEL MS PEAK_FACTOR
  [ -z "$2" ] && return
  awk -v l="$1" -v ms="$2" -v f="$pf" -v p="${peak:-0}" -v x="$3" 'BEGIN {
    g = f / ms * 1e3; printf "  %-44s %9.1f ms %8.1f GFLOP/s %6.1f%% of its peak\n", l, ms, g, (p > 0 ? 100 * g / (p * x) : 0) }'
}
prow "minigpt kernels (float64)" "$gp" 1
prow "OpenBLAS dgemm ($(cat "$tmp/blas_float64" 2>/dev/null))" "$b64" 1
prow "OpenBLAS sgemm ($(cat "$tmp/blas_float32" 2>/dev/null))" "$b32" 2
echo
echo "ceilings, two cores: a step of nothing but these products, 2x the one-thread speed:"
crow() { # crow LABEL MS_PER_STEP_ONE_THREAD
  [ -z "$2" ] && return
  awk -v l="$1" -v ms="$2" -v t="${t32:-}" -v u="${t64:-}" 'BEGIN {
    s = 2e3 / ms
    printf "  %-44s %7.2f steps/s", l, s
    if (t != "") printf "  %5.2fx PyTorch f32", s / t
    if (u != "") printf "  %5.2fx PyTorch f64", s / u
    printf "\n" }'
}
crow "float64 at minigpt's kernels' speed" "$gp"
crow "float64 at OpenBLAS dgemm's speed" "$b64"
[ -n "${peak:-}" ] && crow "float64 at the FMA peak" "$(awk -v f="$pf" -v p="$peak" 'BEGIN {print f / p * 1e3}')"
crow "float32 at OpenBLAS sgemm's speed" "$b32"
echo
echo "measured, two cores, medians of $ROUNDS rounds:"
[ -n "$gs" ] && echo "  minigpt f64           $gs steps/s$( [ -n "$t32" ] && awk -v a="$gs" -v b="$t32" 'BEGIN {printf "  %.2fx PyTorch f32", a / b}')$( [ -n "$t64" ] && awk -v a="$gs" -v b="$t64" 'BEGIN {printf "  %.2fx PyTorch f64", a / b}')"
[ -n "$t32" ] && echo "  PyTorch f32 ($TORCH32_ENV)  $t32 steps/s"
[ -n "$t64" ] && echo "  PyTorch f64 ($TORCH_ENV)  $t64 steps/s"
exit 0
