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
#   MINIGPT_KERNELS=avx2 bench/ceiling.sh   # the AVX2 path on an AVX-512 CPU
#   CORETYPES="Haswell Zen" TORCH32_ENV="Haswell 1 2" bench/ceiling.sh
#
# CORETYPES lists the OpenBLAS kernels timed on the products, each in
# every round (CORETYPE, one kernel, is still read): by default the
# fair references of the kernel path minigpt runs (bench/cpu.sh): on the
# AVX2 path Haswell, with Zen first on AMD; on AVX-512 SkylakeX and
# Cooperlake, with Zen after them on AMD. MINIGPT_KERNELS=avx2 on an
# AVX-512 machine times minigpt's AVX2 path against the AVX2 kernels
# only, and PyTorch with ATEN_CPU_CAPABILITY=avx2. The ceilings use the
# fastest kernel's medians. TORCH32_ENV and TORCH_ENV are PyTorch's
# settings, "CORETYPE TORCH_THREADS OPENBLAS_THREADS" as in compare.sh
# (default on an Intel AVX-512 path "Cooperlake 1 2" and "SkylakeX 1 2",
# what compare.sh's probes chose on the 2-vCPU Xeon on 2026-12-01;
# elsewhere the first of CORETYPES with 1 torch and 2 OpenBLAS threads).
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset for the references, as
# in compare.sh. Needs /usr/bin/python3 with NumPy, threadpoolctl and
# torch (see compare.sh); a missing one is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-/usr/bin/python3}
SIZE=${SIZE:-full}
ROUNDS=${ROUNDS:-5}
case $SIZE in seed|baby|mid|full) ;; *) echo "ceiling.sh: SIZE must be seed, baby, mid or full, not $SIZE" >&2; exit 2 ;; esac
case $ROUNDS in ''|*[!0-9]*|0) echo "ceiling.sh: ROUNDS must be a whole number of at least 1, not '$ROUNDS'" >&2; exit 2 ;; esac
[ -n "${CORETYPE:-}" ] && CORETYPES=${CORETYPES:-$CORETYPE}
. bench/cpu.sh
first_ct=${REF_CORETYPES%% *}
if [ "$KPATH" = avx512 ] && [ "$VENDOR" = Intel ]; then
  TORCH32_ENV=${TORCH32_ENV:-"Cooperlake 1 2"}
  TORCH_ENV=${TORCH_ENV:-"SkylakeX 1 2"}
else
  TORCH32_ENV=${TORCH32_ENV:-"$first_ct 1 2"}
  TORCH_ENV=${TORCH_ENV:-"$first_ct 1 2"}
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/results
: >"$log"

ref() { # ref CORETYPE CMD...: as compare.sh's
  local ct=$1; shift
  if [ "$ct" = auto ]; then
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ${TORCH_CAP:+ATEN_CPU_CAPABILITY=$TORCH_CAP} "$@"
  else
    env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE="$ct" ${TORCH_CAP:+ATEN_CPU_CAPABILITY=$TORCH_CAP} "$@"
  fi
}
metric() { awk -v m="$1" '/^Benchmark/ {for (i = 2; i <= NF; i++) if ($i == m) print $(i-1)}' | head -1; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
get() { awk -v k="$1" '$1 == k && $2 != "" {print $2}' "$log" | median; }

cpu_describe
go test -c -o "$tmp/minigpt.test" .
go test -c -o "$tmp/kernels.test" ./internal/kernels
peak=$(cpu_peak "$tmp/kernels.test" 15)
echo "FMA peak: ${peak:-?} GFLOP/s per core (BenchmarkPeakFMA/${PEAK_ISA:-best ISA}, best of 15)"

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
    for ct in $REF_CORETYPES; do
      for dt in float64 float32; do
        ref "$ct" $PY bench/gemm_ref.py --config "$SIZE" --dtype $dt --rounds 2 >"$tmp/out"
        sed -n 's/^BLAS: //p' "$tmp/out" >"$tmp/blas_${dt}_$ct"
        echo "blas_${dt}_$ct $(sed -nE 's|.*median ([0-9.]+) ms/step.*|\1|p' "$tmp/out")" >>"$log"
        echo "blas_gflop $(sed -nE 's|.* ([0-9.]+) GFLOP, threads.*|\1|p' "$tmp/out")" >>"$log"
      done
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

gp=$(get go_products); gf=$(get go_gflop)
# The fastest kernel's medians (ms: the smallest) for the ceilings.
b64=""; b32=""; ct64=""; ct32=""
for ct in $REF_CORETYPES; do
  x=$(get "blas_float64_$ct"); y=$(get "blas_float32_$ct")
  if [ -n "$x" ] && { [ -z "$b64" ] || awk -v a="$x" -v b="$b64" 'BEGIN {exit !(a < b)}'; }; then b64=$x; ct64=$ct; fi
  if [ -n "$y" ] && { [ -z "$b32" ] || awk -v a="$y" -v b="$b32" 'BEGIN {exit !(a < b)}'; }; then b32=$y; ct32=$ct; fi
done
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
prow "minigpt kernels (float64, $KPATH)" "$gp" 1
for ct in $REF_CORETYPES; do
  prow "OpenBLAS dgemm ($(cat "$tmp/blas_float64_$ct" 2>/dev/null))" "$(get "blas_float64_$ct")" 1
done
for ct in $REF_CORETYPES; do
  prow "OpenBLAS sgemm ($(cat "$tmp/blas_float32_$ct" 2>/dev/null))" "$(get "blas_float32_$ct")" 2
done
if [ -n "$b64" ]; then
  echo
  for ct in $REF_CORETYPES; do
    x=$(get "blas_float64_$ct")
    [ -n "$x" ] && awk -v l="$ct" -v a="$gp" -v b="$x" 'BEGIN {printf "  minigpt / OpenBLAS %-10s dgemm: %.2fx its time (above 1x minigpt is faster)\n", l, b / a}'
  done
fi
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
crow "float64 at OpenBLAS dgemm's speed (${ct64:-})" "$b64"
[ -n "${peak:-}" ] && crow "float64 at the FMA peak" "$(awk -v f="$pf" -v p="$peak" 'BEGIN {print f / p * 1e3}')"
crow "float32 at OpenBLAS sgemm's speed (${ct32:-})" "$b32"
echo
echo "measured, two cores, medians of $ROUNDS rounds:"
[ -n "$gs" ] && echo "  minigpt f64           $gs steps/s$( [ -n "$t32" ] && awk -v a="$gs" -v b="$t32" 'BEGIN {printf "  %.2fx PyTorch f32", a / b}')$( [ -n "$t64" ] && awk -v a="$gs" -v b="$t64" 'BEGIN {printf "  %.2fx PyTorch f64", a / b}')"
[ -n "$t32" ] && echo "  PyTorch f32 ($TORCH32_ENV)  $t32 steps/s"
[ -n "$t64" ] && echo "  PyTorch f64 ($TORCH_ENV)  $t64 steps/s"
exit 0
