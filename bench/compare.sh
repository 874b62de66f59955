#!/usr/bin/env bash
# Runs the Go benchmarks and the reference implementations alternately on
# this machine and prints the ratios. The machine is shared and noisy, so
# each side runs ROUNDS times (default 3), interleaved, and the medians are
# compared. Needs /usr/bin/python3 with NumPy (apt-get install -y
# python3-numpy libopenblas0-pthread) and, for the baby config, PyTorch
# (apt-get install -y python3-torch); a missing reference is skipped.
#
#   bench/compare.sh            # seed config training and greedy decoding vs NumPy
#   BABY=1 bench/compare.sh     # also nanoGPT's baby config vs PyTorch float64
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-/usr/bin/python3}
REF=${REF:-../shared/reference}
ROUNDS=${ROUNDS:-3}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
gobench() { # gobench PATTERN BENCHTIME METRIC
  go test -run '^$' -bench "$1" -benchtime "$2" -count 1 . |
    awk -v m="$3" '{for (i = 2; i <= NF; i++) if ($i == m) print $(i-1)}' | head -1
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/ {print $2}') GiB, $(go version | cut -d' ' -f3-)"
have_numpy=1; $PY -c 'import numpy' 2>/dev/null || have_numpy=0
have_torch=0; [ "${BABY:-0}" = 1 ] && $PY -c 'import torch' 2>/dev/null && have_torch=1

: >/tmp/minigpt_bench.$$
for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS" >&2
  echo "go_train $(gobench '^BenchmarkTrainStep$' 60x steps/s)" >>/tmp/minigpt_bench.$$
  echo "go_decode $(gobench '^BenchmarkGenerate/greedy/cached$' 3x tokens/s)" >>/tmp/minigpt_bench.$$
  if [ $have_numpy = 1 ]; then
    echo "np_train $($PY "$REF/bench_numpy.py" train 100 | sed -E 's/.*= ([0-9.]+) steps\/s.*/\1/')" >>/tmp/minigpt_bench.$$
    echo "np_decode $($PY "$REF/bench_numpy.py" generate 1000 | sed -E 's/.*= ([0-9.]+) tokens\/s.*/\1/')" >>/tmp/minigpt_bench.$$
  fi
  if [ $have_torch = 1 ]; then
    echo "go_baby $(gobench '^BenchmarkTrainStepBaby$' 20x tokens/s)" >>/tmp/minigpt_bench.$$
    echo "torch_baby $(OPENBLAS_NUM_THREADS=2 $PY bench/torch_baby.py --threads 1 --steps 60 | sed -nE 's/.* ([0-9.]+) tokens\/s.*/\1/p')" >>/tmp/minigpt_bench.$$
  fi
done
get() { awk -v k="$1" '$1 == k {print $2}' /tmp/minigpt_bench.$$ | median; }
row() { # row LABEL GOKEY REFKEY UNIT
  local g r; g=$(get "$2"); r=$(get "$3")
  if [ -n "$r" ]; then
    awk -v l="$1" -v g="$g" -v r="$r" -v u="$4" 'BEGIN {printf "%-34s go %10.1f %s   reference %10.1f   ratio %.2fx\n", l, g, u, r, g/r}'
  else
    awk -v l="$1" -v g="$g" -v u="$4" 'BEGIN {printf "%-34s go %10.1f %s   (reference not installed)\n", l, g, u}'
  fi
}
echo "medians of $ROUNDS interleaved rounds:"
row "seed config training (vs NumPy)" go_train np_train steps/s
row "greedy decoding 1000 tok (vs NumPy)" go_decode np_decode tokens/s
[ $have_torch = 1 ] && row "baby config training (vs PyTorch)" go_baby torch_baby tokens/s
rm -f /tmp/minigpt_bench.$$
