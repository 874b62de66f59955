# cpu.sh, sourced by ceiling.sh and compare.sh, owns which of minigpt's
# kernel paths they time and which OpenBLAS kernels (and PyTorch CPU
# capability) are the fair references for it, on Intel and AMD alike.
#
# It sets:
#   VENDOR        AMD, Intel or the CPU's vendor_id
#   KPATH         the kernel path minigpt's benchmarks run: MINIGPT_KERNELS
#                 when set (go, avx2 or avx512; it caps the path, as the
#                 kernels read it), else the best the CPU has
#   KPATH_CAPPED  1 when MINIGPT_KERNELS caps the path below the CPU's best
#                 (the AVX2 path timed on an AVX-512 machine)
#   REF_CORETYPES the OpenBLAS kernels to time beside that path, best
#                 first: on the AVX2 path Haswell, and on AMD Zen (the same
#                 AVX2 kernels with Zen's blocking) first; on the AVX-512
#                 path SkylakeX and Cooperlake, and on AMD Zen after them
#                 (Zen 4 has AVX-512; OpenBLAS 0.3.21 picks Cooperlake or
#                 even Prescott there by itself)
#   REF_AUTO      1 when OpenBLAS's own choice of kernel may be tried too:
#                 not when the path is capped, since on an AVX-512 CPU it
#                 picks an AVX-512 kernel
#   TORCH_CAP     ATEN_CPU_CAPABILITY for PyTorch's own loops: avx2 when the
#                 path is capped to AVX2, so that neither side uses AVX-512
#   PEAK_ISA      the BenchmarkPeakFMA sub-benchmark that is this path's
#                 peak: avx2 or avx512 (empty: the best)
# CORETYPES set by the caller overrides REF_CORETYPES.
cpu_flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
case $(grep -m1 '^vendor_id' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | xargs) in
  AuthenticAMD) VENDOR=AMD ;;
  GenuineIntel) VENDOR=Intel ;;
  *) VENDOR=$(grep -m1 '^vendor_id' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | xargs) ;;
esac
cpu_best=go
grep -qw avx2 <<<"$cpu_flags" && grep -qw fma <<<"$cpu_flags" && cpu_best=avx2
grep -qw avx512f <<<"$cpu_flags" && cpu_best=avx512
KPATH=$cpu_best
KPATH_CAPPED=0
case ${MINIGPT_KERNELS:-} in
  go) KPATH=go ;;
  avx2) [ "$cpu_best" = avx512 ] && KPATH=avx2 ;;
esac
[ "$KPATH" != "$cpu_best" ] && KPATH_CAPPED=1
if [ "$KPATH" = avx512 ]; then
  REF_CORETYPES="SkylakeX Cooperlake"
  [ "$VENDOR" = AMD ] && REF_CORETYPES="$REF_CORETYPES Zen"
  PEAK_ISA=avx512
else
  REF_CORETYPES=Haswell
  [ "$VENDOR" = AMD ] && REF_CORETYPES="Zen Haswell"
  PEAK_ISA=$([ "$KPATH" = avx2 ] && echo avx2 || true)
fi
REF_AUTO=1
TORCH_CAP=
if [ "$KPATH_CAPPED" = 1 ]; then
  REF_AUTO=0
  [ "$KPATH" = avx2 ] && TORCH_CAP=avx2
fi
if [ -n "${CORETYPES:-}" ]; then REF_CORETYPES=$CORETYPES; fi

# cpu_describe prints the machine line both scripts start with.
cpu_describe() {
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" \
    "($VENDOR, family $(grep -m1 '^cpu family' /proc/cpuinfo | cut -d: -f2 | xargs), model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | xargs))," \
    "$(grep -qw avx512f <<<"$cpu_flags" && echo AVX-512 || echo 'no AVX-512'), $(go version | cut -d' ' -f3-)"
  echo "minigpt kernels: $KPATH$([ "$KPATH_CAPPED" = 1 ] && echo " (MINIGPT_KERNELS=$MINIGPT_KERNELS on a CPU whose best is $cpu_best)");" \
    "OpenBLAS kernels beside it: $REF_CORETYPES$([ "$REF_AUTO" = 1 ] && echo ' (and OpenBLAS'"'"'s own choice where probed)')$([ -n "$TORCH_CAP" ] && echo "; PyTorch with ATEN_CPU_CAPABILITY=$TORCH_CAP")"
}

# cpu_peak BINARY RUNS prints the best GFLOP/s of RUNS short runs of
# BenchmarkPeakFMA (this path's ISA) from the kernels' test binary.
cpu_peak() {
  local bin=$1 runs=$2 r
  for r in $(seq "$runs"); do "$bin" -test.run '^$' -test.bench "BenchmarkPeakFMA/${PEAK_ISA}" -test.benchtime 100x |
    awk '/^Benchmark/ {for (i = 2; i <= NF; i++) if ($i == "GFLOP/s") print $(i-1)}'; done | sort -g | tail -1
}
