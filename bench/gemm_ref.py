#!/usr/bin/env python3
"""One training step's matrix products through NumPy's BLAS (OpenBLAS on
Debian), float64 (dgemm) or float32 (sgemm): the reference for
bench/ceiling.sh.

The list of products is minigpt's stepProducts (bench_test.go): per layer
the forward, input-gradient and weight-gradient products of qkv, proj, fc
and fcproj, then the head's three; attention's per-head products are left
out. With A transposed (the weight gradients) NumPy passes a transposed
view, so BLAS reads the layer's input in place, as minigpt's trainer does.

Usage (Debian: apt-get install -y python3-numpy python3-threadpoolctl):
  /usr/bin/python3 gemm_ref.py [--config seed|baby|mid|full] [--dtype float64|float32]
      [--threads N] [--rounds N]
Prints the BLAS library and kernel that ran, then the median and the best
of --rounds timings of the whole list: ms per step and GFLOP/s.
"""

import argparse
import os
import sys
import time

CONFIGS = {  # the shapes of torch_ref.py's and BenchmarkStepProducts' configs
    "seed": dict(block=32, batch=32, layers=2, embd=64, vocab=24),
    "baby": dict(block=64, batch=12, layers=4, embd=128, vocab=65),
    "mid": dict(block=128, batch=8, layers=4, embd=256, vocab=65),
    "full": dict(block=256, batch=4, layers=6, embd=384, vocab=65),
}


def step_products(c):
    """(M, N, K, transposed A) for every product of one step."""
    m, e, v = c["batch"] * c["block"], c["embd"], c["vocab"]
    ps = []
    for _ in range(c["layers"]):
        for i, o in ((e, 3 * e), (e, e), (e, 4 * e), (4 * e, e)):
            ps += [(m, o, i, False), (m, i, o, False), (i, o, m, True)]
    return ps + [(m, v, e, False), (m, e, v, False), (e, v, m, True)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", choices=sorted(CONFIGS), default="full")
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    if args.rounds < 1 or args.threads < 1:
        sys.exit("gemm_ref.py: --rounds and --threads must be at least 1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(args.threads))
    import numpy as np

    blas = "?"
    try:
        from threadpoolctl import threadpool_info

        blas = ", ".join(f"{i['internal_api']} {i.get('architecture', '?')} x{i['num_threads']}" for i in threadpool_info())
    except ImportError:
        pass
    dt = np.dtype(args.dtype)
    rng = np.random.default_rng(1)
    ops, flops = [], 0.0
    for m, n, k, tr in step_products(CONFIGS[args.config]):
        a = (rng.random((k, m) if tr else (m, k)) - 0.5).astype(dt)
        b = (rng.random((k, n)) - 0.5).astype(dt)
        ops.append((a.T if tr else a, b, np.empty((m, n), dt)))
        flops += 2.0 * m * n * k
    for a, b, c in ops:  # warm-up
        np.matmul(a, b, out=c)
    times = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        for a, b, c in ops:
            np.matmul(a, b, out=c)
        times.append(time.perf_counter() - t0)
    times.sort()
    med, best = times[len(times) // 2], times[0]
    print(f"BLAS: {blas}")
    print(f"gemm_ref {args.dtype} {args.config} products [{len(ops)} a step, {flops / 1e9:.4f} GFLOP, threads={args.threads}]: "
          f"median {med * 1e3:.1f} ms/step {flops / med / 1e9:.1f} GFLOP/s, "
          f"best {best * 1e3:.1f} ms/step {flops / best / 1e9:.1f} GFLOP/s")


if __name__ == "__main__":
    main()
