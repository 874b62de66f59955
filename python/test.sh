#!/usr/bin/env bash
# The Python side of the interop (issue 29, docs/interop.md), run by
# .ci/run: PyTorch's twin of the model (and its BPE tokenizer) against Go's logits and ids, Python's
# safetensors files against Go's, DDP on 1 and 2 processes with torchrun,
# resuming, and export -> torchrun -> import -> generate. go test ./...
# never needs any of it. Installs python3-torch and python3-numpy with apt
# if they are missing; if that fails it says so loudly and skips.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1

echo "== python/test.sh: the PyTorch twin (characters and BPE), DDP with torchrun, export -> torchrun -> import -> generate"
if ! "$PY" -c 'import torch, numpy, regex' 2>/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  for try in 1 2 3; do
    if apt-get update -qq && apt-get install -y -qq python3-torch python3-numpy python3-regex >/dev/null; then break; fi
    echo "apt-get failed (try $try of 3)"; sleep 5
  done
fi
if ! "$PY" -c 'import torch, numpy, regex' 2>/dev/null; then
  # Only the package registry being unreachable gets here.
  echo "WARNING: python3-torch/python3-numpy/python3-regex could not be installed: the Python interop tests (logits parity, BPE parity, DDP, export -> torchrun -> import) were NOT run"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/bin/" ./cmd/export ./cmd/import ./cmd/generate ./cmd/train ./cmd/tokenize
MINIGPT_BIN="$tmp/bin" "$PY" -m unittest discover -s python -p 'test_*.py' -v
