#!/usr/bin/env python3
"""The project's own NumPy implementation of the seed model, for timing.

Same architecture and semantics as minigpt (and the seed lessons): token +
position embeddings; per layer a pre-LayerNorm block
    x = x + attn(LN1(x)) @ Wo          (q, k, v without bias; causal softmax
                                         attention scaled by 1/sqrt(head size))
    x = x + relu(LN2(x) @ W1 + b1) @ W2 + b2
then a final LayerNorm, a head with bias and the mean cross-entropy;
LayerNorm eps 1e-5; Adam (lr 3e-3, betas 0.9/0.999, eps 1e-8). Everything in
float64, matrix products through NumPy's BLAS. The forward/backward pair is
written out by hand, like minigpt's; `check` compares its gradient with
central finite differences on a tiny model.

Usage (Debian: apt-get install -y python3-numpy libopenblas0-pthread
python3-threadpoolctl; use /usr/bin/python3):
    numpy_ref.py train STEPS [--config seed|baby] [--text FILE]
    numpy_ref.py generate TOKENS         (greedy decoding, seed config)
    numpy_ref.py check                   (gradient against finite differences)
Without --text the corpus is a fixed pseudo-random text over the config's
vocabulary size (24 letters for seed, as Lantern Bay has; 65 for baby, as
tiny Shakespeare has): the time per step depends on the shapes only.
Timing starts after 5 warm-up steps.
"""
import argparse
import sys
import time

import numpy as np

CONFIGS = {
    "seed": dict(block=32, batch=32, layers=2, heads=4, embd=64, vocab=24),
    "baby": dict(block=64, batch=12, layers=4, heads=4, embd=128, vocab=65),
}


def blas_info():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "threadpoolctl not installed"
    out = []
    for p in threadpool_info():
        if p.get("user_api") == "blas":
            out.append(f"{p.get('internal_api')} {p.get('version')} "
                       f"kernel {p.get('architecture')} threads {p.get('num_threads')}")
    return "; ".join(out) or "no BLAS found"


def synthetic_text(vocab, n=200_000, seed=7):
    alphabet = [chr(33 + i) for i in range(vocab)]
    rng = np.random.default_rng(seed)
    return "".join(alphabet[i] for i in rng.integers(0, vocab, n))


class Model:
    def __init__(self, vocab, block, embd, heads, layers, seed=42):
        rng = np.random.default_rng(seed)
        C = embd
        self.V, self.T, self.C, self.H, self.L = vocab, block, embd, heads, layers

        def w(*shape):
            return rng.normal(0.0, 0.02, shape)

        p = {"wte": w(vocab, C), "wpe": w(block, C)}
        for l in range(layers):
            p[f"ln1g{l}"], p[f"ln1b{l}"] = np.ones(C), np.zeros(C)
            p[f"wqkv{l}"], p[f"wo{l}"] = w(C, 3 * C), w(C, C)
            p[f"ln2g{l}"], p[f"ln2b{l}"] = np.ones(C), np.zeros(C)
            p[f"w1{l}"], p[f"b1{l}"] = w(C, 4 * C), np.zeros(4 * C)
            p[f"w2{l}"], p[f"b2{l}"] = w(4 * C, C), np.zeros(C)
        p["lnfg"], p["lnfb"] = np.ones(C), np.zeros(C)
        p["wh"], p["bh"] = w(C, vocab), np.zeros(vocab)
        self.p = p

    @staticmethod
    def ln_forward(x, g, b):
        mu = x.mean(-1, keepdims=True)
        xc = x - mu
        rstd = 1.0 / np.sqrt((xc * xc).mean(-1, keepdims=True) + 1e-5)
        xhat = xc * rstd
        return xhat * g + b, (xhat, rstd, g)

    @staticmethod
    def ln_backward(dout, cache):
        xhat, rstd, g = cache
        dxhat = dout * g
        dx = rstd * (dxhat - dxhat.mean(-1, keepdims=True)
                     - xhat * (dxhat * xhat).mean(-1, keepdims=True))
        n = dout.shape[-1]
        return dx, (dout * xhat).reshape(-1, n).sum(0), dout.reshape(-1, n).sum(0)

    def forward(self, idx, targets=None):
        p, C, H = self.p, self.C, self.H
        B, T = idx.shape
        hs = C // H
        mask = np.triu(np.ones((T, T), dtype=bool), 1)
        x = p["wte"][idx] + p["wpe"][:T]
        caches = []
        for l in range(self.L):
            a, c1 = self.ln_forward(x, p[f"ln1g{l}"], p[f"ln1b{l}"])
            qkv = a @ p[f"wqkv{l}"]
            q, k, v = (qkv[..., i * C:(i + 1) * C].reshape(B, T, H, hs).transpose(0, 2, 1, 3)
                       for i in range(3))
            s = (q @ k.transpose(0, 1, 3, 2)) / np.sqrt(hs)
            s[..., mask] = -np.inf
            s = np.exp(s - s.max(-1, keepdims=True))
            att = s / s.sum(-1, keepdims=True)
            y = (att @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
            x2 = x + y @ p[f"wo{l}"]
            m, c2 = self.ln_forward(x2, p[f"ln2g{l}"], p[f"ln2b{l}"])
            h = m @ p[f"w1{l}"] + p[f"b1{l}"]
            r = np.maximum(h, 0.0)
            x = x2 + r @ p[f"w2{l}"] + p[f"b2{l}"]
            caches.append((a, c1, q, k, v, att, y, m, c2, h, r))
        f, cf = self.ln_forward(x, p["lnfg"], p["lnfb"])
        logits = f @ p["wh"] + p["bh"]
        self.cache = (idx, caches, f, cf)
        if targets is None:
            return logits, None
        z = logits - logits.max(-1, keepdims=True)
        e = np.exp(z)
        se = e.sum(-1, keepdims=True)
        n = B * T
        tg = targets.reshape(-1)
        zf = z.reshape(n, -1)
        loss = float(np.mean(np.log(se.reshape(-1)) - zf[np.arange(n), tg]))
        d = (e / se).reshape(n, -1)
        d[np.arange(n), tg] -= 1.0
        self.dlogits = (d / n).reshape(logits.shape)
        return logits, loss

    def backward(self):
        p, C, H = self.p, self.C, self.H
        idx, caches, f, cf = self.cache
        B, T = idx.shape
        hs = C // H
        g = {}
        dl = self.dlogits
        g["wh"] = f.reshape(-1, C).T @ dl.reshape(-1, self.V)
        g["bh"] = dl.reshape(-1, self.V).sum(0)
        dx, g["lnfg"], g["lnfb"] = self.ln_backward(dl @ p["wh"].T, cf)
        for l in reversed(range(self.L)):
            a, c1, q, k, v, att, y, m, c2, h, r = caches[l]
            g[f"w2{l}"] = r.reshape(-1, 4 * C).T @ dx.reshape(-1, C)
            g[f"b2{l}"] = dx.reshape(-1, C).sum(0)
            dh = (dx @ p[f"w2{l}"].T) * (h > 0)
            g[f"w1{l}"] = m.reshape(-1, C).T @ dh.reshape(-1, 4 * C)
            g[f"b1{l}"] = dh.reshape(-1, 4 * C).sum(0)
            dm, g[f"ln2g{l}"], g[f"ln2b{l}"] = self.ln_backward(dh @ p[f"w1{l}"].T, c2)
            dx = dx + dm
            g[f"wo{l}"] = y.reshape(-1, C).T @ dx.reshape(-1, C)
            dy = (dx @ p[f"wo{l}"].T).reshape(B, T, H, hs).transpose(0, 2, 1, 3)
            datt = dy @ v.transpose(0, 1, 3, 2)
            dv = att.transpose(0, 1, 3, 2) @ dy
            ds = att * (datt - (datt * att).sum(-1, keepdims=True)) / np.sqrt(hs)
            dq = ds @ k
            dk = ds.transpose(0, 1, 3, 2) @ q
            dqkv = np.concatenate([t.transpose(0, 2, 1, 3).reshape(B, T, C) for t in (dq, dk, dv)], -1)
            g[f"wqkv{l}"] = a.reshape(-1, C).T @ dqkv.reshape(-1, 3 * C)
            da, g[f"ln1g{l}"], g[f"ln1b{l}"] = self.ln_backward(dqkv @ p[f"wqkv{l}"].T, c1)
            dx = dx + da
        g["wte"] = np.zeros_like(p["wte"])
        np.add.at(g["wte"], idx.reshape(-1), dx.reshape(-1, C))
        g["wpe"] = np.zeros_like(p["wpe"])
        g["wpe"][:T] = dx.sum(0)
        return g


class Adam:
    def __init__(self, params, lr=3e-3, b1=0.9, b2=0.999, eps=1e-8):
        self.lr, self.b1, self.b2, self.eps, self.t = lr, b1, b2, eps, 0
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params, grads):
        self.t += 1
        c1, c2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
        for k, gk in grads.items():
            m, v = self.m[k], self.v[k]
            m *= self.b1
            m += (1 - self.b1) * gk
            v *= self.b2
            v += (1 - self.b2) * gk * gk
            params[k] -= self.lr * (m / c1) / (np.sqrt(v / c2) + self.eps)


def encode(text):
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    return np.array([stoi[c] for c in text], dtype=np.int64), len(chars)


def train(args, cfg):
    text = open(args.text, encoding="utf-8").read() if args.text else synthetic_text(cfg["vocab"])
    data, vocab = encode(text)
    block, batch = cfg["block"], cfg["batch"]
    model = Model(vocab, block, cfg["embd"], cfg["heads"], cfg["layers"])
    opt = Adam(model.p)
    rng = np.random.default_rng(1)
    offs = np.arange(block)

    def step():
        ix = rng.integers(0, len(data) - block - 1, batch)
        x, y = data[ix[:, None] + offs], data[ix[:, None] + offs + 1]
        _, loss = model.forward(x, y)
        opt.step(model.p, model.backward())
        return loss

    for _ in range(5):
        loss0 = step()
    t0 = time.perf_counter()
    for _ in range(args.n):
        loss = step()
    dt = time.perf_counter() - t0
    print(f"numpy [{args.config}] loss {loss0:.4f} -> {loss:.4f}; BLAS: {blas_info()}")
    print(f"numpy train [{args.config}]: {args.n} steps in {dt:.3f} s = {args.n / dt:.2f} steps/s "
          f"= {args.n * batch * block / dt:.0f} tokens/s")


def generate(args, cfg):
    model = Model(cfg["vocab"], cfg["block"], cfg["embd"], cfg["heads"], cfg["layers"])
    ids = [1, 2, 3, 4]

    def run(n):
        seq = list(ids)
        for _ in range(n):
            window = np.array([seq[-cfg["block"]:]])
            logits, _ = model.forward(window)
            seq.append(int(np.argmax(logits[0, -1])))
        return seq

    run(20)
    t0 = time.perf_counter()
    run(args.n)
    dt = time.perf_counter() - t0
    print(f"numpy greedy generate [{args.config}]: {args.n} tokens in {dt:.3f} s = {args.n / dt:.0f} tokens/s")


def check():
    model = Model(7, 5, 8, 2, 2, seed=3)
    rng = np.random.default_rng(4)
    for k in model.p:  # move every parameter off its initial value
        model.p[k] = model.p[k] + rng.normal(0, 0.3, model.p[k].shape)
    idx, tg = rng.integers(0, 7, (3, 5)), rng.integers(0, 7, (3, 5))
    model.forward(idx, tg)
    g = model.backward()
    worst = 0.0
    for k, v in model.p.items():
        for i in range(v.size):
            old = v.flat[i]
            v.flat[i] = old + 1e-6
            lp = model.forward(idx, tg)[1]
            v.flat[i] = old - 1e-6
            lm = model.forward(idx, tg)[1]
            v.flat[i] = old
            worst = max(worst, abs((lp - lm) / 2e-6 - g[k].flat[i]))
    print(f"max |analytic - finite difference| over all parameters: {worst:.2e}")
    sys.exit(0 if worst < 1e-7 else 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["train", "generate", "check"])
    ap.add_argument("n", type=int, nargs="?", default=100)
    ap.add_argument("--config", choices=sorted(CONFIGS), default="seed")
    ap.add_argument("--text")
    args = ap.parse_args()
    if args.what == "check":
        check()
    elif args.what == "train":
        train(args, CONFIGS[args.config])
    else:
        generate(args, CONFIGS[args.config])


if __name__ == "__main__":
    main()
