#!/usr/bin/env python3
"""PyTorch training-speed reference, float32 or float64, for any shape, with
the same architecture as minigpt and bench/numpy_ref.py.

Architecture: token + position embeddings; per layer a pre-LN block
  x = x + Wo(attn(LN1(x)))   (Q, K, V, Wo without bias; causal softmax
                              attention scaled by 1/sqrt(head_size))
  x = x + W2(relu(W1(LN2(x)) + b1)) + b2
then final LN, head Linear(C, V) with bias (not tied to the embedding),
mean cross-entropy. LN eps 1e-5. No dropout. Adam(lr=1e-3), betas 0.9/0.999.
Every tensor in --dtype (default float64, minigpt's precision).

Configs (the sizes of bench/compare.sh's scale table and of minigpt's
BenchmarkTrainStepScale):
  seed: the seed lessons' config: block 32, batch 32, width 64, 4 heads,
        2 layers, vocabulary 24 (Lantern Bay's); 0.10M parameters.
  baby (default): nanoGPT's CPU "baby" shakespeare_char size: block 64,
        batch 12, 4 layers, 4 heads, width 128, vocabulary 65 (tiny
        Shakespeare's); 0.82M parameters.
  mid:  block 128, batch 8, 4 layers, 4 heads (of 64, as full), width 256,
        vocabulary 65; 3.2M parameters.
  full: nanoGPT's config/train_shakespeare_char.py shape: block 256,
        6 layers, 6 heads, width 384, vocabulary 65, at batch 4 (nanoGPT
        trains at 64); 10.8M parameters.
--layers, --heads, --embd, --block, --batch and --vocab override the
config's values one by one. Without --text FILE the corpus is a fixed
pseudo-random text over the vocabulary (the time per step depends on the
shapes only); with it, the vocabulary is the sorted set of the file's
characters (--vocab is then ignored), first 90% = train.

Usage (Debian: apt-get install -y python3-torch python3-numpy; use /usr/bin/python3):
  /usr/bin/python3 torch_ref.py [--config seed|baby|mid|full] [--dtype float32|float64]
      [--layers N] [--heads N] [--embd N] [--block N] [--batch N] [--vocab N]
      [--threads N] [--steps N] [--warmup N] [--text FILE]
--threads N sets torch.set_num_threads(N) and, unless already set in the
environment, OPENBLAS_NUM_THREADS=N (Debian's torch calls OpenBLAS for matmuls).
Timing starts after --warmup steps (default 10). The last line gives steps/s,
tokens/s (steps * batch * block / seconds) and the process's peak resident
memory (resource.getrusage ru_maxrss: the torch runtime, the model, Adam's
state and the activations of a step), with the resident memory before the
first step beside it for scale.
"""
import argparse
import math
import os
import resource
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
    "seed": dict(block=32, batch=32, layers=2, heads=4, embd=64, vocab=24),
    "baby": dict(block=64, batch=12, layers=4, heads=4, embd=128, vocab=65),
    "mid": dict(block=128, batch=8, layers=4, heads=4, embd=256, vocab=65),
    "full": dict(block=256, batch=4, layers=6, heads=6, embd=384, vocab=65),
}
DTYPES = {"float32": torch.float32, "float64": torch.float64}


class LayerNorm(nn.Module):
    def __init__(self, c, dtype):
        super().__init__()
        self.g = nn.Parameter(torch.ones(c, dtype=dtype))
        self.b = nn.Parameter(torch.zeros(c, dtype=dtype))

    def forward(self, x):
        return F.layer_norm(x, (x.shape[-1],), self.g, self.b, eps=1e-5)


class Block(nn.Module):
    def __init__(self, c, h, dtype):
        super().__init__()
        self.h = h
        self.ln1 = LayerNorm(c, dtype)
        self.wq = nn.Linear(c, c, bias=False, dtype=dtype)
        self.wk = nn.Linear(c, c, bias=False, dtype=dtype)
        self.wv = nn.Linear(c, c, bias=False, dtype=dtype)
        self.wo = nn.Linear(c, c, bias=False, dtype=dtype)
        self.ln2 = LayerNorm(c, dtype)
        self.w1 = nn.Linear(c, 4 * c, dtype=dtype)
        self.w2 = nn.Linear(4 * c, c, dtype=dtype)

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
    def __init__(self, vocab, block, embd, heads, layers, dtype):
        super().__init__()
        self.E = nn.Parameter(torch.randn(vocab, embd, dtype=dtype) * 0.02)
        self.P = nn.Parameter(torch.randn(block, embd, dtype=dtype) * 0.02)
        self.blocks = nn.ModuleList([Block(embd, heads, dtype) for _ in range(layers)])
        self.lnf = LayerNorm(embd, dtype)
        self.head = nn.Linear(embd, vocab, dtype=dtype)
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


def rss_mib():
    """The process's resident memory now, in MiB (Linux /proc; else 0)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


def peak_rss_mib():
    """The process's peak resident memory so far, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes on macOS, KiB elsewhere


def positive(s):
    v = int(s)
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} is not a positive integer")
    return v


def main():
    ap = argparse.ArgumentParser(description="PyTorch training-speed reference with minigpt's architecture.")
    ap.add_argument("--config", choices=list(CONFIGS), default="baby")
    ap.add_argument("--dtype", choices=list(DTYPES), default="float64")
    for k in ("layers", "heads", "embd", "block", "batch", "vocab"):
        ap.add_argument("--" + k, type=positive, help=f"override the config's {k}")
    ap.add_argument("--threads", type=positive, default=1)
    ap.add_argument("--steps", type=positive, default=200)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--text")
    ap.add_argument("--warmup", type=int, default=10)
    args = ap.parse_args()
    cfg = dict(CONFIGS[args.config])
    label = args.config
    for k in cfg:
        if getattr(args, k) is not None and getattr(args, k) != cfg[k]:
            cfg[k] = getattr(args, k)
            label += f" {k}={cfg[k]}"
    if cfg["embd"] % cfg["heads"]:
        ap.error(f"width {cfg['embd']} is not divisible by {cfg['heads']} heads")
    if not args.text and not 2 <= cfg["vocab"] <= 94:
        ap.error(f"vocabulary {cfg['vocab']} is outside [2, 94] (the synthetic text uses printable ASCII)")
    dtype = DTYPES[args.dtype]
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    text = load_text(args, cfg)
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    train = data[: int(0.9 * len(data))]
    block, batch = cfg["block"], cfg["batch"]
    if len(train) < block + 2:
        sys.exit(f"torch_ref.py: {len(train)} training characters, block {block} needs at least {block + 2}")
    cfg["vocab"] = len(chars)

    model = GPT(len(chars), block, cfg["embd"], cfg["heads"], cfg["layers"], dtype)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    nparams = sum(p.numel() for p in model.parameters())
    print(f"config {label}: {cfg} {args.dtype} params {nparams} "
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

    before = rss_mib()
    warm = max(args.warmup, 1)
    for _ in range(warm):
        loss0 = step()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    dt = time.perf_counter() - t0
    if not (math.isfinite(loss0) and math.isfinite(loss)):
        sys.exit(f"torch_ref.py: the loss is not finite ({loss0} after warm-up, {loss} at the end)")
    print(f"loss after warm-up {loss0:.4f}, after {warm + args.steps} steps {loss:.4f}")
    short = {"float32": "f32", "float64": "f64"}[args.dtype]
    print(f"torch {short} train [{label}, threads={args.threads}]: {args.steps} steps in {dt:.3f} s "
          f"= {args.steps / dt:.2f} steps/s = {args.steps * batch * block / dt:.0f} tokens/s; "
          f"peak RSS {peak_rss_mib():.0f} MiB ({before:.0f} MiB before the first step)")


if __name__ == "__main__":
    main()
