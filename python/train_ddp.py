#!/usr/bin/env python3
"""Trains minigpt's model (python/minigpt.py) with PyTorch's
DistributedDataParallel on N processes or GPUs, from scratch on a text or
from a model exported by cmd/export, and writes a safetensors file that
cmd/import turns back into a minigpt checkpoint (docs/interop.md).

    torchrun --standalone --nproc_per_node=2 python/train_ddp.py \\
        --init lanternbay.safetensors --text data/lanternbay.txt --steps 200 --out tuned.safetensors
    torchrun --standalone --nproc_per_node=2 python/train_ddp.py \\
        --text data/tinyshakespeare.txt --block 64 --embd 128 --heads 4 --layers 4 \\
        --batch 12 --lr 1e-3 --steps 2000 --checkpoint run.pt --checkpoint-every 200 --out baby.safetensors
    torchrun --standalone --nproc_per_node=2 python/train_ddp.py --resume run.pt --steps 4000 --out baby.safetensors --force

Each step draws --batch windows (the global batch) from one generator
seeded with --seed, the same on every process; process r of N takes the
r-th of N equal slices, and DDP averages the gradients, so the step is
the same at any N up to float rounding: the loss curves of 1 and 2
processes agree (python/test_interop.py checks it). CPU processes talk
over gloo; --device cuda uses NCCL, one GPU a process (untested here: no
GPU was available). Without torchrun the script runs as one process.

The training rules follow cmd/train: the first 90% of the text trains and
the rest validates, Adam(W) with beta1 0.9, beta2 0.999, eps 1e-8, decay
only on matrices and embeddings, linear warmup and optional cosine decay,
optional gradient clipping. The vocabulary is the --init model's (every
character of the text must be in it) or, from scratch, the text's sorted
characters, as minigpt builds it.

--checkpoint FILE saves the whole state (model, optimizer, sampler,
step, loss history) with torch.save; --resume FILE continues it exactly
(on any number of processes with the same global batch). Files are
written atomically; an existing one is replaced only with --force (or
as the --resume file), and anything but a regular file never.

Exit status: 0 done; 2 refused before training (a flag, a file); 1
failed after training began.
"""

import argparse
import hashlib
import json
import math
import os
import pickle
import sys
import time
from dataclasses import asdict

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import minigpt  # noqa: E402

CHECKPOINT_FORMAT = "minigpt-ddp-1"

# Training settings and their defaults (cmd/train's); None in the parsed
# arguments means "not given", so that --resume can refuse them.
TRAIN_DEFAULTS = dict(
    batch=32, lr=3e-3, seed=42, warmup=0, cosine=False, min_lr=0.0, grad_clip=0.0,
    weight_decay=0.0, eval_every=0, eval_batches=8, precision="float64",
)
SHAPE_DEFAULTS = dict(block=32, embd=64, heads=4, layers=2, tied=False)


class Refusal(Exception):
    """A problem found before training: exit status 2, nothing written."""


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="train_ddp.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--text", help="train on this UTF-8 text file (required unless --resume, which checks it is the same text)")
    ap.add_argument("--init", help="start from this safetensors file (cmd/export's), with a fresh optimizer at step 0")
    ap.add_argument("--resume", help="continue the --checkpoint file of an earlier run exactly")
    ap.add_argument("--out", required=True, help="write the trained model to this safetensors file")
    ap.add_argument("--dtype", default="F64", choices=["F64", "F32"], help="the --out file's tensor type (default F64: every bit)")
    ap.add_argument("--steps", type=int, default=1200, help="optimizer steps of the whole run (with --resume: counted from the start)")
    ap.add_argument("--checkpoint", help="save the whole training state to this file (torch.save) at the end and every --checkpoint-every steps")
    ap.add_argument("--checkpoint-every", type=int, default=0, help="steps between checkpoints; 0: only at the end")
    ap.add_argument("--loss-log", help="write the loss history (JSON lines: step, train or val loss) to this file at the end")
    ap.add_argument("--force", action="store_true", help="replace existing output files; resume on another text")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="cpu (gloo) or cuda (NCCL, one GPU a process; untested here)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per process")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    g = ap.add_argument_group("model shape (from scratch only; --init and --resume bring their own)")
    g.add_argument("--block", type=int, help=f"context length (default {SHAPE_DEFAULTS['block']})")
    g.add_argument("--embd", type=int, help=f"width (default {SHAPE_DEFAULTS['embd']})")
    g.add_argument("--heads", type=int, help=f"attention heads (default {SHAPE_DEFAULTS['heads']})")
    g.add_argument("--layers", type=int, help=f"blocks (default {SHAPE_DEFAULTS['layers']})")
    g.add_argument("--tied", action="store_const", const=True, help="tie the head to the token embedding")
    t = ap.add_argument_group("training (--resume brings its own)")
    t.add_argument("--batch", type=int, help=f"global batch: windows a step over all processes (default {TRAIN_DEFAULTS['batch']})")
    t.add_argument("--lr", type=float, help=f"peak learning rate (default {TRAIN_DEFAULTS['lr']})")
    t.add_argument("--seed", type=int, help=f"seed of the initialisation and the batches (default {TRAIN_DEFAULTS['seed']})")
    t.add_argument("--warmup", type=int, help="linear warmup steps (default 0)")
    t.add_argument("--cosine", action="store_const", const=True, help="cosine decay to --min-lr at the last step")
    t.add_argument("--min-lr", type=float, help="floor of --cosine (default 0)")
    t.add_argument("--grad-clip", type=float, help="clip the global gradient norm to this; 0: off (default)")
    t.add_argument("--weight-decay", type=float, help="AdamW decay on matrices and embeddings (default 0)")
    t.add_argument("--eval-every", type=int, help="validation loss every N steps; 0: at the end only (default)")
    t.add_argument("--eval-batches", type=int, help=f"batches of the fixed validation set (default {TRAIN_DEFAULTS['eval_batches']})")
    t.add_argument("--precision", choices=["float64", "float32"], help="training precision (default float64, as minigpt)")
    return ap.parse_args(argv)


def learning_rate(tc, step):
    """minigpt's TrainConfig.LearningRate(step), step counted from 0."""
    if step < tc["warmup"]:
        return tc["lr"] * (step + 1) / tc["warmup"]
    if not tc["cosine"] or tc["steps"] <= tc["warmup"] + 1:
        return tc["lr"]
    progress = min((step - tc["warmup"]) / (tc["steps"] - 1 - tc["warmup"]), 1.0)
    return tc["min_lr"] + 0.5 * (tc["lr"] - tc["min_lr"]) * (1 + math.cos(math.pi * progress))


def check_output(path, consent, what):
    """Refuses, before any work, an output that may not be written."""
    if path is None:
        return
    if os.path.lexists(path):
        if os.path.islink(path) or not os.path.isfile(path):
            raise Refusal(f"--{what} {path}: not a regular file; it is never replaced, not even with --force")
        if not consent:
            raise Refusal(f"--{what} {path}: the file exists; pass --force to replace it, or choose another file")
    d = os.path.dirname(path) or "."
    if not os.path.isdir(d) or not os.access(d, os.W_OK):
        raise Refusal(f"--{what} {path}: cannot create a file in {d}")


def read_text(path):
    if not os.path.isfile(path):
        raise Refusal(f"--text {path}: not a regular file")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Refusal(f"--text {path}: invalid UTF-8 at byte offset {e.start}") from None
    return text.removeprefix("\ufeff")


def encode(text, vocab, path):
    index = {c: i for i, c in enumerate(vocab)}
    ids = []
    for pos, c in enumerate(text):
        if c not in index:
            raise Refusal(f"--text {path}: {c!r} (U+{ord(c):04X}) at character {pos} is not one of the model's {len(vocab)} characters")
        ids.append(index[c])
    return torch.tensor(ids, dtype=torch.long)


def setup(args):
    """Everything before the first step: returns the run's state."""
    for name in ("steps", "checkpoint_every", "threads"):
        if getattr(args, name) < 0:
            raise Refusal(f"--{name.replace('_', '-')} {getattr(args, name)} is negative")
    if args.resume and args.init:
        raise Refusal("--resume continues a run; --init starts one: give one of them")
    shape_given = [k for k in SHAPE_DEFAULTS if getattr(args, k) is not None]
    train_given = [k for k in TRAIN_DEFAULTS if getattr(args, k) is not None]
    if (args.resume or args.init) and shape_given:
        raise Refusal(f"--{shape_given[0]}: the model's shape comes from the --{'resume' if args.resume else 'init'} file")
    if args.resume and train_given:
        raise Refusal(f"--{train_given[0].replace('_', '-')}: the training settings come from the --resume file (give only --steps and outputs)")
    if not args.resume and not args.text:
        raise Refusal("--text is required (the text to train on)")
    outs = [("out", args.out), ("checkpoint", args.checkpoint), ("loss-log", args.loss_log)]
    seen = {}
    for flag, p in outs + [("init", args.init), ("text", args.text)]:
        if p is None:
            continue
        real = os.path.realpath(p)
        if real in seen:
            raise Refusal(f"--{seen[real]} and --{flag} both name {p}")
        seen[real] = flag
    consent = {}
    for flag, p in outs:
        own = args.resume is not None and p is not None and os.path.realpath(p) == os.path.realpath(args.resume)
        check_output(p, args.force or own, flag)
        consent[flag] = args.force or own

    st = {"history": [], "val_history": [], "step": 0, "opt_state": None, "gen_state": None, "consent": consent}
    if args.resume:
        try:
            ck = load_checkpoint(args.resume)
        except (OSError, RuntimeError, EOFError, pickle.UnpicklingError) as e:
            raise Refusal(f"--resume {args.resume}: {e}") from None
        if not isinstance(ck, dict) or ck.get("format") != CHECKPOINT_FORMAT:
            raise Refusal(f"--resume {args.resume}: not a train_ddp.py checkpoint")
        cfg, vocab = minigpt.Config(**ck["config"]), list(ck["vocab"])
        tc = dict(ck["train"])
        model = minigpt.MiniGPT(cfg, dtype=getattr(torch, tc["precision"]))
        model.load_state_dict(ck["model"])
        st.update(step=ck["step"], opt_state=ck["optimizer"], gen_state=ck["generator"],
                  history=[tuple(p) for p in ck["history"]], val_history=[tuple(p) for p in ck["val_history"]])
        if args.steps < st["step"]:
            raise Refusal(f"--steps {args.steps} is below the checkpoint's step {st['step']}")
        text_path = args.text
        if text_path is None:
            raise Refusal("--text is required with --resume too: the run continues on its text, which is checked")
        text = read_text(text_path)
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != ck["text_sha256"] and not args.force:
            raise Refusal(f"--text {text_path} is not the text the checkpoint was trained on (pass --force to continue on it)")
    else:
        tc = {k: (getattr(args, k) if getattr(args, k) is not None else v) for k, v in TRAIN_DEFAULTS.items()}
        text = read_text(args.text)
        dtype = getattr(torch, tc["precision"])
        if args.init:
            try:
                model, vocab, _ = minigpt.load_safetensors(args.init, dtype=dtype)
            except (OSError, ValueError) as e:
                raise Refusal(f"--init {args.init}: {e}") from None
            cfg = model.config
        else:
            vocab = sorted(set(text))
            shape = {k: (getattr(args, k) if getattr(args, k) is not None else v) for k, v in SHAPE_DEFAULTS.items()}
            cfg = minigpt.Config(vocab_size=len(vocab), block_size=shape["block"], embed_dim=shape["embd"],
                                 heads=shape["heads"], layers=shape["layers"], tied_head=shape["tied"])
            try:
                model = minigpt.MiniGPT(cfg, dtype=dtype)
            except ValueError as e:
                raise Refusal(str(e)) from None
            model.init_weights(torch.Generator().manual_seed(tc["seed"]))
    tc["steps"] = args.steps
    if tc["batch"] < 1 or tc["lr"] <= 0 or tc["warmup"] < 0 or tc["eval_batches"] < 1 or tc["eval_every"] < 0:
        raise Refusal(f"training settings out of range: {tc}")
    data = encode(text, vocab, args.text)
    n = len(data)
    split = n * 9 // 10
    train, val = data[:split], data[split:]
    need = cfg.block_size + 2
    if len(train) < need or len(val) < need:
        raise Refusal(f"--text {args.text}: {n} characters give {len(train)} training and {len(val)} validation tokens; block size {cfg.block_size} needs {need} in each")
    st.update(cfg=cfg, vocab=vocab, tc=tc, model=model, train=train, val=val,
              text_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest())
    return st


def load_checkpoint(path):
    """Reads a --checkpoint file. From torch 2.0 on it is unpickled with
    weights_only, which runs no code from the file; torch 1.x's restricted
    unpickler cannot read the optimizer's floats, so there it is a plain
    pickle: resume only files of your own."""
    if int(torch.__version__.split(".")[0]) >= 2:
        return torch.load(path, map_location="cpu", weights_only=True)
    return torch.load(path, map_location="cpu")


def windows(data, starts, T):
    offs = torch.arange(T)
    return data[starts[:, None] + offs], data[starts[:, None] + offs + 1]


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    distributed = "WORLD_SIZE" in os.environ
    rank, world, local_rank = 0, 1, 0
    if distributed:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
    say = (lambda *a: print(*a, flush=True)) if rank == 0 else (lambda *a: None)
    try:
        st = setup(args)
        if st["tc"]["batch"] % world:
            raise Refusal(f"--batch {st['tc']['batch']} does not split evenly over {world} processes")
        if args.device == "cuda" and not torch.cuda.is_available():
            raise Refusal("--device cuda: no GPU is available")
    except Refusal as e:
        print(f"train_ddp.py: {e}", file=sys.stderr)
        return 2

    device = torch.device("cuda", local_rank) if args.device == "cuda" else torch.device("cpu")
    if distributed:
        if args.device == "cuda":
            torch.cuda.set_device(device)
        dist.init_process_group(backend="nccl" if args.device == "cuda" else "gloo")
    cfg, tc, vocab = st["cfg"], st["tc"], st["vocab"]
    model = st["model"].to(device)
    ddp = DDP(model, device_ids=[local_rank] if args.device == "cuda" else None) if distributed else model
    decay = [p for n, p in model.named_parameters() if model.decays(n)]
    rest = [p for n, p in model.named_parameters() if not model.decays(n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": tc["weight_decay"]}, {"params": rest, "weight_decay": 0.0}],
                            lr=tc["lr"], betas=(0.9, 0.999), eps=1e-8)
    if st["opt_state"] is not None:
        opt.load_state_dict(st["opt_state"])
    gen = torch.Generator()
    gen.manual_seed(tc["seed"])
    if st["gen_state"] is not None:
        gen.set_state(st["gen_state"])
    T, B = cfg.block_size, tc["batch"]
    local = slice(rank * B // world, (rank + 1) * B // world)
    train, val = st["train"], st["val"]
    # The fixed validation batches, the same in every run of this seed.
    vgen = torch.Generator()
    vgen.manual_seed(tc["seed"] + 1)
    val_batches = [windows(val, torch.randint(0, len(val) - T - 1, (B,), generator=vgen), T) for _ in range(tc["eval_batches"])]

    def evaluate():
        model.eval()
        with torch.no_grad():
            losses = [model(x.to(device), y.to(device))[1].item() for x, y in val_batches]
        model.train()
        return sum(losses) / len(losses)

    def save_checkpoint(step):
        if rank == 0:
            state = {
                "format": CHECKPOINT_FORMAT, "config": asdict(cfg), "vocab": "".join(vocab),
                "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
                "optimizer": opt.state_dict(), "step": step, "generator": gen.get_state(), "train": tc,
                "text_sha256": st["text_sha256"], "history": st["history"], "val_history": st["val_history"],
            }
            # Once written, the checkpoint is this run's own to replace.
            minigpt.save_file_atomic(args.checkpoint, lambda f: torch.save(state, f), overwrite=st["consent"]["checkpoint"])
            st["consent"]["checkpoint"] = True
        if distributed:
            dist.barrier()

    nparams = sum(p.numel() for p in model.parameters())
    say(f"train_ddp.py: {world} process{'es' if world > 1 else ''} on {device.type}, {nparams} parameters, {cfg}, "
        f"global batch {B}, steps {st['step']}..{tc['steps']}, {tc['precision']}, torch {torch.__version__}")
    start, t0 = st["step"], time.time()
    every = max(1, (tc["steps"] - start) // 20)
    try:
        for step in range(start, tc["steps"]):
            for g in opt.param_groups:
                g["lr"] = learning_rate(tc, step)
            starts = torch.randint(0, len(train) - T - 1, (B,), generator=gen)
            x, y = windows(train, starts[local], T)
            _, loss = ddp(x.to(device), y.to(device))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if tc["grad_clip"] > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), tc["grad_clip"])
            opt.step()
            mean = loss.detach().clone()
            if distributed:
                dist.all_reduce(mean)
                mean /= world
            if not math.isfinite(mean.item()):
                raise RuntimeError(f"training diverged: loss {mean.item()} in step {step + 1}")
            st["history"].append((step + 1, mean.item()))
            done = step + 1
            if tc["eval_every"] and done % tc["eval_every"] == 0:
                st["val_history"].append((done, evaluate()))
            if not args.quiet and (done % every == 0 or done == tc["steps"]):
                say(f"step {done}/{tc['steps']}: loss {mean.item():.6f}, lr {learning_rate(tc, step):.3g}, {time.time() - t0:.1f} s")
            if args.checkpoint and args.checkpoint_every and done % args.checkpoint_every == 0 and done < tc["steps"]:
                save_checkpoint(done)
        if not st["val_history"] or st["val_history"][-1][0] != tc["steps"]:
            st["val_history"].append((tc["steps"], evaluate()))
        say(f"done: step {tc['steps']}, val loss {st['val_history'][-1][1]:.6f}, {time.time() - t0:.1f} s")
        if args.checkpoint:
            save_checkpoint(tc["steps"])
        if rank == 0:
            minigpt.save_safetensors(args.out, model, vocab, tc["steps"], dtype=torch.float64 if args.dtype == "F64" else torch.float32,
                                     overwrite=st["consent"]["out"])
            say(f"wrote {args.out} ({args.dtype}); bring it back with: go run ./cmd/import -in {args.out} -out MODEL.ckpt")
            if args.loss_log:
                lines = [json.dumps({"step": s, "train_loss": v}) for s, v in st["history"]]
                lines += [json.dumps({"step": s, "val_loss": v}) for s, v in st["val_history"]]
                minigpt.save_file_atomic(args.loss_log, lambda f: f.write(("\n".join(lines) + "\n").encode()), overwrite=st["consent"]["loss-log"])
        if distributed:
            dist.barrier()
    except Exception as e:  # after the work began: exit status 1
        print(f"train_ddp.py: {e}", file=sys.stderr)
        return 1
    finally:
        if distributed:
            dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
