#!/usr/bin/env python3
"""Generates testdata/golden_tiny.json: golden forward/backward values for a tiny
MiniGPT, computed with the NumPy reference: minigpt_ref.py, the NumPy MiniGPT of
the seed lesson (lesson 003's code with its indentation restored). The reference
is not part of this repository; pass the directory that holds it.

Regenerate (needs NumPy; on Debian: apt-get install -y python3-numpy
libopenblas0-pthread, and use the system interpreter):

    cd testdata && /usr/bin/python3 golden_gen.py DIR_WITH_MINIGPT_REF

It writes golden_tiny.json next to this script. The output is deterministic up to
the last bits of floating-point rounding: the reference uses BLAS matmuls, whose
summation order can differ between BLAS builds, so a regenerated file may differ
from the committed one in the last ulps. Compare with a tolerance (~1e-12 relative).

What is in the file
-------------------
- config: vocab 7, block 5, embd 8, heads 2, layers 2.
- params: every parameter, by the reference's names, in the reference's order
  (E, P, then per layer l: ln1g, ln1b, Wq, Wk, Wv, Wo, ln2g, ln2b, W1, b1, W2, b2;
  then lnfg, lnfb, Wh, bh), each {"shape": [...], "data": [row-major floats]}.
  Weight matrices are stored as the reference uses them, x @ W, i.e. shape
  (in, out); E is (vocab, embd), P is (block, embd).
  The model is built with MiniGPT(7, 5, 8, 2, 2, seed=1), then EVERY parameter is
  overwritten, in that order, from np.random.default_rng(123):
  weights/embeddings ~ normal(0, 0.3); LayerNorm gains = 1 + normal(0, 0.2);
  biases (ln*b, b1*, b2*, bh) ~ normal(0, 0.1).
- cases: after the parameters, the same rng draws, for case 0 (B=3, T=5):
  idx = integers(0, 7, (3, 5)), targets = integers(0, 7, (3, 5)); then case 1
  (B=2, T=3, shorter than block): idx, targets likewise with shape (2, 3).
  Each case holds idx, targets (flat row-major), loss (the reference's, which is
  mean(-log(p[target] + 1e-12))), loss_no_eps (exact mean of -log_softmax at the
  targets, via log-sum-exp), logits (flat, B*T*vocab) and grads (one flat list
  per parameter, same names and shapes as params; the grads are of the
  no-eps loss, since the reference's backward uses p - onehot).
  For T < block the rows T.. of grads["P"] are zero.
Floats are written with Python's repr (shortest string that round-trips), so
the parsed float64 values are exactly the ones NumPy computed.
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if len(sys.argv) != 2 or not os.path.isfile(os.path.join(sys.argv[1], "minigpt_ref.py")):
    sys.exit("usage: golden_gen.py DIR  (DIR holds minigpt_ref.py, the seed's NumPy MiniGPT)")
sys.path.insert(0, os.path.abspath(sys.argv[1]))
from minigpt_ref import MiniGPT  # noqa: E402  (module import trains nothing)

V, BS, C, H, L = 7, 5, 8, 2, 2


def is_bias(name):
    return name.startswith(("ln1b", "ln2b", "lnfb", "b1", "b2", "bh"))


def is_gain(name):
    return name.startswith(("ln1g", "ln2g", "lnfg"))


def flat(a):
    return [float(x) for x in np.asarray(a, dtype=np.float64).reshape(-1)]


def main():
    model = MiniGPT(vocab_size=V, block_size=BS, n_embd=C, n_head=H, n_layer=L, seed=1)
    rng = np.random.default_rng(123)
    for name, p in model.P.items():  # dict insertion order = reference order
        if is_gain(name):
            new = 1.0 + rng.normal(0, 0.2, p.shape)
        elif is_bias(name):
            new = rng.normal(0, 0.1, p.shape)
        else:
            new = rng.normal(0, 0.3, p.shape)
        model.P[name] = np.asarray(new, dtype=np.float64)

    cases_in = []
    for (B, T) in [(3, 5), (2, 3)]:
        idx = rng.integers(0, V, size=(B, T))
        targets = rng.integers(0, V, size=(B, T))
        cases_in.append((B, T, idx, targets))

    params = {name: {"shape": list(p.shape), "data": flat(p)} for name, p in model.P.items()}

    cases = []
    for B, T, idx, targets in cases_in:
        logits, loss = model.forward(idx, targets)
        grads = model.backward()
        fl = logits.reshape(-1, V)
        m = fl.max(axis=1, keepdims=True)
        lse = (m + np.log(np.exp(fl - m).sum(axis=1, keepdims=True)))[:, 0]
        tg = targets.reshape(-1)
        loss_no_eps = float(np.mean(lse - fl[np.arange(len(tg)), tg]))
        assert abs(loss_no_eps - float(loss)) < 1e-9, (loss_no_eps, loss)
        cases.append({
            "B": B, "T": T,
            "idx": [int(i) for i in idx.reshape(-1)],
            "targets": [int(i) for i in tg],
            "loss": float(loss),
            "loss_no_eps": loss_no_eps,
            "logits": flat(logits),
            "grads": {name: flat(grads[name]) for name in model.P},
        })

    out = {
        "config": {"vocab": V, "block": BS, "embd": C, "heads": H, "layers": L},
        "params": params,
        "cases": cases,
    }
    # Sanity: every float round-trips through its JSON text.
    text = dump(out)
    back = json.loads(text)
    assert back == out
    path = os.path.join(HERE, "golden_tiny.json")
    with open(path, "w") as f:
        f.write(text)
    n = sum(len(p["data"]) for p in params.values())
    print(f"wrote {path}: {n} params, {len(cases)} cases, {len(text)} bytes")
    for c in cases:
        print(f"  B={c['B']} T={c['T']} loss={c['loss']!r} loss_no_eps={c['loss_no_eps']!r}")


def dump(obj, ind=0):
    """JSON with one leaf list per line (diff-friendly); floats via repr."""
    sp = " " * ind
    if isinstance(obj, dict):
        if all(not isinstance(v, (dict, list)) or (isinstance(v, list) and len(v) <= 4) for v in obj.values()):
            return json.dumps(obj, allow_nan=False)
        items = [f'{sp} {json.dumps(k)}: {dump(v, ind + 1)}' for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + sp + "}"
    if isinstance(obj, list) and obj and isinstance(obj[0], dict):
        items = [sp + " " + dump(v, ind + 1) for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + sp + "]"
    return json.dumps(obj, allow_nan=False)


if __name__ == "__main__":
    main()
