#!/usr/bin/env python3
"""PyTorch float64 training-speed baseline with the same architecture as
minigpt and bench/numpy_ref.py.

Architecture: token + position embeddings; per layer a pre-LN block
  x = x + Wo(attn(LN1(x)))   (Q, K, V, Wo without bias; causal softmax
                              attention scaled by 1/sqrt(head_size))
  x = x + W2(relu(W1(LN2(x)) + b1)) + b2
then final LN, head Linear(C, V) with bias, mean cross-entropy. LN eps 1e-5.
Everything in torch.float64, Adam(lr=1e-3).

Configs:
  baby (default): nanoGPT's "baby" shakespeare_char size: block 64, batch 12,
        4 layers, 4 heads, width 128, vocabulary 65 (tiny Shakespeare's).
  seed: the seed lessons' config: block 32, batch 32, width 64, 4 heads,
        2 layers, vocabulary 24 (Lantern Bay's).
Without --text FILE the corpus is a fixed pseudo-random text over the
config's vocabulary (the time per step depends on the shapes only); with it,
the vocabulary is the sorted set of the file's characters, first 90% = train.

Usage (Debian: apt-get install -y python3-torch python3-numpy; use /usr/bin/python3):
  /usr/bin/python3 torch_baby.py [--config baby|seed] [--threads N] [--steps N] [--text FILE]
--threads N sets torch.set_num_threads(N) and, unless already set in the
environment, OPENBLAS_NUM_THREADS=N (Debian's torch calls OpenBLAS for matmuls).
Timing starts after --warmup steps (default 10); prints steps/s and tokens/s
(tokens/s = steps * batch * block / seconds).
"""
import argparse
import math
import os
import sys
import time


def _early_threads():
    # Debian's torch does its matmuls in OpenBLAS (pthread build), whose own
    # thread pool ignores torch.set_num_threads; so --threads N also sets
    # OPENBLAS_NUM_THREADS=N (unless already set), which must happen before
    # torch is imported.
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return "1"


os.environ.setdefault("OPENBLAS_NUM_THREADS", _early_threads())

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

CONFIGS = {
    "baby": dict(block=64, batch=12, layers=4, heads=4, embd=128, vocab=65),
    "seed": dict(block=32, batch=32, layers=2, heads=4, embd=64, vocab=24),
}


class LayerNorm(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.g = nn.Parameter(torch.ones(c, dtype=torch.float64))
        self.b = nn.Parameter(torch.zeros(c, dtype=torch.float64))

    def forward(self, x):
        return F.layer_norm(x, (x.shape[-1],), self.g, self.b, eps=1e-5)


class Block(nn.Module):
    def __init__(self, c, h):
        super().__init__()
        self.h = h
        self.ln1 = LayerNorm(c)
        self.wq = nn.Linear(c, c, bias=False, dtype=torch.float64)
        self.wk = nn.Linear(c, c, bias=False, dtype=torch.float64)
        self.wv = nn.Linear(c, c, bias=False, dtype=torch.float64)
        self.wo = nn.Linear(c, c, bias=False, dtype=torch.float64)
        self.ln2 = LayerNorm(c)
        self.w1 = nn.Linear(c, 4 * c, dtype=torch.float64)
        self.w2 = nn.Linear(4 * c, c, dtype=torch.float64)

    def forward(self, x, mask):
        B, T, C = x.shape
        hs = C // self.h
        a = self.ln1(x)
        q = self.wq(a).view(B, T, self.h, hs).transpose(1, 2)
        k = self.wk(a).view(B, T, self.h, hs).transpose(1, 2)
        v = self.wv(a).view(B, T, self.h, hs).transpose(1, 2)
        sc = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        sc = sc.masked_fill(mask[:T, :T], float("-inf"))
        att = torch.softmax(sc, dim=-1) @ v
        x = x + self.wo(att.transpose(1, 2).reshape(B, T, C))
        return x + self.w2(torch.relu(self.w1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab, block, embd, heads, layers):
        super().__init__()
        self.E = nn.Parameter(torch.randn(vocab, embd, dtype=torch.float64) * 0.02)
        self.P = nn.Parameter(torch.randn(block, embd, dtype=torch.float64) * 0.02)
        self.blocks = nn.ModuleList([Block(embd, heads) for _ in range(layers)])
        self.lnf = LayerNorm(embd)
        self.head = nn.Linear(embd, vocab, dtype=torch.float64)
        for name, p in self.named_parameters():  # reference init: N(0, 0.02), biases 0
            if name.endswith("weight"):
                nn.init.normal_(p, 0.0, 0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
        self.register_buffer("mask", torch.triu(torch.ones(block, block, dtype=torch.bool), 1))

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.E[idx] + self.P[:T]
        for blk in self.blocks:
            x = blk(x, self.mask)
        logits = self.head(self.lnf(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def load_text(args, cfg):
    if args.text:
        with open(args.text, encoding="utf-8") as f:
            return f.read()
    g = torch.Generator().manual_seed(7)
    alphabet = [chr(33 + i) for i in range(cfg["vocab"])]
    return "".join(alphabet[i] for i in torch.randint(0, cfg["vocab"], (200_000,), generator=g).tolist())


def blas_info():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "threadpoolctl not installed"
    out = [f"{p.get('internal_api')} {p.get('version')} kernel {p.get('architecture')} "
           f"threads {p.get('num_threads')}" for p in threadpool_info() if p.get("user_api") == "blas"]
    return "; ".join(out) or "no BLAS found"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", choices=sorted(CONFIGS), default="baby")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--text")
    ap.add_argument("--warmup", type=int, default=10)
    args = ap.parse_args()
    cfg = CONFIGS[args.config]
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    text = load_text(args, cfg)
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    train = data[: int(0.9 * len(data))]
    block, batch = cfg["block"], cfg["batch"]

    model = GPT(len(chars), block, cfg["embd"], cfg["heads"], cfg["layers"])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    nparams = sum(p.numel() for p in model.parameters())
    print(f"config {args.config} {cfg} vocab {len(chars)} params {nparams} "
          f"threads {torch.get_num_threads()} OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')} "
          f"torch {torch.__version__}; BLAS: {blas_info()}")

    gen = torch.Generator().manual_seed(args.seed)
    offs = torch.arange(block)

    def step():
        ix = torch.randint(0, len(train) - block - 1, (batch,), generator=gen)
        x = train[ix[:, None] + offs]
        y = train[ix[:, None] + offs + 1]
        loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    warm = max(args.warmup, 1)
    for _ in range(warm):
        loss0 = step()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    dt = time.perf_counter() - t0
    print(f"loss after warm-up {loss0:.4f}, after {warm + args.steps} steps {loss:.4f}")
    print(f"torch f64 train [{args.config}, threads={args.threads}]: {args.steps} steps in {dt:.3f} s "
          f"= {args.steps / dt:.2f} steps/s = {args.steps * batch * block / dt:.0f} tokens/s")


if __name__ == "__main__":
    main()
