"""The interop tests of issue 29 (python/test.sh runs them; docs/interop.md):
logits parity with Go, Python's files against Go's byte for byte, DDP on 1
and 2 processes, resuming, and the whole path export -> torchrun ->
import -> generate with the weights checked bit for bit.

Go's commands come from $MINIGPT_BIN (test.sh builds them there) or are
built into a temporary directory.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import minigpt  # noqa: E402
import train_ddp  # noqa: E402

# minigpt.LanternBay, the corpus of the embedded model (setUpModule checks
# the copy against the model's vocabulary and Go's length, 10,020).
LANTERN_BAY = (
    "the lamp keeper walks the shore at dusk. "
    "the lamp keeper lights the lantern when the fog rolls in. "
    "the boats come home when the lantern glows. "
    "the boats wait outside the bay when the fog is thick. "
    "a small boat drifts near the rocks at dawn. "
    "the keeper rings the bell when a boat drifts near the rocks. "
    "the tide rises at dusk and falls at dawn. "
    "the gulls call over the bay when the tide is low. "
    "the keeper counts the boats and writes the count in a book. "
    "the lantern burns all night and rests at dawn. "
) * 20

BIN = None
TMP = None


def setUpModule():
    global BIN, TMP
    TMP = tempfile.mkdtemp(prefix="minigpt-interop-")
    BIN = os.environ.get("MINIGPT_BIN")
    if not BIN:
        BIN = os.path.join(TMP, "bin")
        subprocess.run(["go", "build", "-o", BIN + "/", "./cmd/export", "./cmd/import", "./cmd/generate", "./cmd/train"],
                       cwd=ROOT, check=True)
    with open(os.path.join(TMP, "lanternbay.txt"), "w", encoding="utf-8") as f:
        f.write(LANTERN_BAY)
    go("export", "-out", path("embedded.safetensors"), "-logits", path("embedded.json"))
    _, vocab, _ = minigpt.load_safetensors(path("embedded.safetensors"))
    assert len(LANTERN_BAY) == 10020 and sorted(set(LANTERN_BAY)) == vocab, "the copy of minigpt.LanternBay differs"


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def path(name):
    return os.path.join(TMP, name)


def go(cmd, *args):
    """Runs one of Go's commands; returns its stdout."""
    r = subprocess.run([os.path.join(BIN, cmd), *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"{cmd} {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return r.stdout


def torchrun(nproc, *args, check=True):
    """Runs train_ddp.py under torchrun on nproc CPU processes."""
    launcher = [shutil.which("torchrun")] if shutil.which("torchrun") else [sys.executable, "-m", "torch.distributed.run"]
    cmd = launcher + ["--standalone", f"--nproc_per_node={nproc}"]
    from torch.distributed.elastic.multiprocessing.api import Std
    if Std.from_str("0") is None:
        # torch before 2.0 on Python 3.11 reads the default "0" as None and
        # fails (meta-llama/llama#86); a mapping for a rank that does not
        # exist leaves every rank's streams alone.
        cmd += ["--redirects", "9:1", "--tee", "9:1"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    r = subprocess.run(cmd + [os.path.join(HERE, "train_ddp.py"), *args], capture_output=True, text=True, env=env)
    if check and r.returncode != 0:
        raise AssertionError(f"torchrun {nproc} {' '.join(args)}: exit {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r


def train_plain(*args):
    """Runs train_ddp.py as one plain process (no torchrun)."""
    return subprocess.run([sys.executable, os.path.join(HERE, "train_ddp.py"), *args], capture_output=True, text=True)


def read(name, mode="r"):
    with open(name, mode) as f:
        return f.read()


def losses(log):
    with open(log) as f:
        return [json.loads(line)["train_loss"] for line in f if "train_loss" in line]


def bits(t):
    return t.detach().to(torch.float64).contiguous().view(torch.int64)


class LogitsParity(unittest.TestCase):
    """In float64 the PyTorch model's logits are Go's within 1e-12: relative
    for logits of magnitude 1 or more, absolute below."""

    def check(self, safetensors, logits_json):
        model, vocab, _ = minigpt.load_safetensors(safetensors)
        with open(logits_json) as f:
            want = json.load(f)
        self.assertEqual([vocab.index(c) for c in want["prompt"]], want["tokens"])
        with torch.no_grad():
            got = model(torch.tensor([want["tokens"]]))[0]
        ref = torch.tensor(want["logits"], dtype=torch.float64)
        self.assertEqual(got.shape, ref.shape)
        err = (got - ref).abs()
        rel = (err / ref.abs().clamp(min=1.0)).max().item()
        print(f"\n  {os.path.basename(safetensors)}: {ref.numel()} logits, max |logit| {ref.abs().max().item():.3f}, "
              f"max error {err.max().item():.3g}, max scaled error {rel:.3g}", file=sys.stderr)
        self.assertLessEqual(rel, 1e-12)
        return model

    def test_embedded_model(self):
        self.check(path("embedded.safetensors"), path("embedded.json"))

    def test_tied_model(self):
        ckpt = path("tied.ckpt")
        if not os.path.exists(ckpt):
            go("train", "-tied", "-steps", "150", "-weights-only", "-out", ckpt)
        go("export", "-model", ckpt, "-out", path("tied.safetensors"), "-logits", path("tied.json"),
           "-logits-prompt", "the gulls call over the bay", "-force")
        model = self.check(path("tied.safetensors"), path("tied.json"))
        self.assertTrue(model.config.tied_head)
        self.assertFalse(hasattr(model, "head_weight"))


class Files(unittest.TestCase):
    def test_python_writes_gos_bytes(self):
        """Loaded and saved again by Python, Go's export is the same file,
        in F64 and (rounding in both languages to nearest) in F32."""
        model, vocab, step = minigpt.load_safetensors(path("embedded.safetensors"))
        minigpt.save_safetensors(path("py64.safetensors"), model, vocab, step, overwrite=True)
        go("export", "-out", path("go32.safetensors"), "-dtype", "F32", "-force")
        minigpt.save_safetensors(path("py32.safetensors"), model, vocab, step, dtype=torch.float32, overwrite=True)
        for py, ref in (("py64", "embedded"), ("py32", "go32")):
            self.assertTrue(read(path(py + ".safetensors"), "rb") == read(path(ref + ".safetensors"), "rb"), f"{py} differs from Go's {ref}")

    def test_go_reads_pythons_tied_model(self):
        cfg = minigpt.Config(vocab_size=5, block_size=6, embed_dim=8, heads=2, layers=3, tied_head=True)
        model = minigpt.MiniGPT(cfg)
        model.init_weights(torch.Generator().manual_seed(3))
        minigpt.save_safetensors(path("pytied.safetensors"), model, list("abcde"), 7, overwrite=True)
        go("import", "-in", path("pytied.safetensors"), "-out", path("pytied.ckpt"), "-force")
        go("export", "-model", path("pytied.ckpt"), "-out", path("pytied2.safetensors"), "-force")
        back, vocab, step = minigpt.load_safetensors(path("pytied2.safetensors"))
        self.assertEqual((back.config, vocab, step), (cfg, list("abcde"), 7))
        for name, t in model.state_dict().items():
            self.assertTrue(torch.equal(bits(t), bits(back.state_dict()[name])), name)

    def test_reader_refuses(self):
        good = read(path("embedded.safetensors"), "rb")
        n = int.from_bytes(good[:8], "little")
        header = good[8:8 + n].decode()
        cases = {
            "duplicate": header.replace('"lnf_gain":', '"lnf_bias":', 1),
            "hole": header.replace("[0,12288]", "[8,12296]", 1).replace("[12288,28672]", "[12296,28672]", 1),
            "shape": header.replace('"shape":[24,64]', '"shape":[64,24]', 1),
        }
        for name, h in cases.items():
            h = h.encode()
            h += b" " * (-len(h) % 8)
            with open(path("bad.safetensors"), "wb") as f:
                f.write(len(h).to_bytes(8, "little") + h + good[8 + n:])
            with self.assertRaises(minigpt.FormatError, msg=name):
                minigpt.load_safetensors(path("bad.safetensors"))

    def test_existing_file_needs_overwrite(self):
        model, vocab, step = minigpt.load_safetensors(path("embedded.safetensors"))
        target = path("mine.safetensors")
        with open(target, "w") as f:
            f.write("mine")
        with self.assertRaises(FileExistsError):
            minigpt.save_safetensors(target, model, vocab, step)
        self.assertEqual(read(target), "mine")
        self.assertEqual(sorted(os.listdir(TMP)), sorted(set(os.listdir(TMP))))
        self.assertFalse(os.path.exists(path(".mine.safetensors.tmp-minigpt")))


# From scratch on Lantern Bay, a small model: the same global batch of 8
# windows on 1 and 2 processes.
SCRATCH = ["--text", None, "--block", "16", "--embd", "32", "--heads", "2", "--layers", "2",
           "--batch", "8", "--steps", "20", "--lr", "3e-3", "--seed", "7", "--quiet"]


def scratch(**over):
    args = list(SCRATCH)
    args[1] = path("lanternbay.txt")
    for k, v in over.items():
        flag = "--" + k.replace("_", "-")
        if flag in args:
            args[args.index(flag) + 1] = v
        else:
            args += [flag, v]
    return args


class DDP(unittest.TestCase):
    def test_one_and_two_processes_give_the_same_curve(self):
        """Each process takes half the global batch and DDP averages the
        gradients: the step, and so the loss curve, is the 1-process one up
        to float rounding (the sums split differently)."""
        curves = {}
        for n in (1, 2):
            log = path(f"curve{n}.jsonl")
            torchrun(n, *scratch(), "--out", path(f"curve{n}.safetensors"), "--loss-log", log, "--force")
            curves[n] = torch.tensor(losses(log), dtype=torch.float64)
        one, two = curves[1], curves[2]
        self.assertEqual(len(one), 20)
        diff = ((one - two).abs() / one.abs()).max().item()
        print(f"\n  1 vs 2 processes: losses {one[0]:.6f} -> {one[-1]:.6f}, max relative difference {diff:.3g}", file=sys.stderr)
        self.assertLess(one[-1], one[0] - 0.5, "the model did not learn")
        self.assertLessEqual(diff, 1e-9)

    def test_resume_continues_exactly(self):
        """10 steps, a checkpoint, 10 more: the weights and loss curve of 20
        uninterrupted steps, to the bit (one process, no torchrun)."""
        r = train_plain(*scratch(), "--out", path("straight.safetensors"), "--loss-log", path("straight.jsonl"), "--force")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = train_plain(*scratch(steps="10"), "--out", path("half.safetensors"), "--checkpoint", path("half.pt"), "--force")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = train_plain("--resume", path("half.pt"), "--text", path("lanternbay.txt"), "--steps", "20", "--quiet",
                        "--out", path("resumed.safetensors"), "--loss-log", path("resumed.jsonl"), "--force")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(losses(path("resumed.jsonl")), losses(path("straight.jsonl")))
        self.assertTrue(read(path("resumed.safetensors"), "rb") == read(path("straight.safetensors"), "rb"), "the resumed run's weights differ")

    def test_refusals(self):
        target = path("taken.safetensors")
        with open(target, "w") as f:
            f.write("mine")
        other = path("other.txt")
        with open(other, "w") as f:
            f.write(LANTERN_BAY + "Z")
        for args, want in (
            (scratch() + ["--out", target], "the file exists; pass --force"),
            (["--init", path("embedded.safetensors"), "--text", other, "--out", path("x.safetensors")], "'Z' (U+005A) at character 10020"),
            (["--init", path("embedded.safetensors"), "--text", other, "--layers", "3", "--out", path("x.safetensors")], "--layers: the model's shape comes from the --init file"),
            (scratch(batch="7") + ["--out", path("x.safetensors")], None),
        ):
            r = train_plain(*args) if want else torchrun(2, *args, check=False)
            self.assertNotEqual(r.returncode, 0, args)
            self.assertIn(want or "--batch 7 does not split evenly over 2 processes", r.stderr)
        self.assertEqual(read(target), "mine")
        self.assertFalse(os.path.exists(path("x.safetensors")))


class WholePath(unittest.TestCase):
    def test_export_ddp_import_generate(self):
        """Go's embedded model -> 30 DDP steps on 2 processes -> Go: the
        checkpoint generates text, and its weights are the ones the Python
        side trained, to the bit (compared with torch.save's copy, which
        never went through safetensors)."""
        torchrun(2, "--init", path("embedded.safetensors"), "--text", path("lanternbay.txt"), "--steps", "30",
                 "--batch", "8", "--quiet", "--out", path("tuned.safetensors"), "--checkpoint", path("tuned.pt"), "--force")
        go("import", "-in", path("tuned.safetensors"), "-out", path("tuned.ckpt"), "-force")
        text = go("generate", "-model", path("tuned.ckpt"), "-greedy", "-n", "60", "-prompt", "the keeper ")
        print(f"\n  generate -greedy: {text.strip()!r}", file=sys.stderr)
        self.assertTrue(text.startswith("the keeper ") and len(text.strip()) >= 60, text)
        self.assertTrue(set(text.strip()) <= set(LANTERN_BAY), text)

        go("export", "-model", path("tuned.ckpt"), "-out", path("tuned-back.safetensors"), "-force")
        back, vocab, step = minigpt.load_safetensors(path("tuned-back.safetensors"))
        self.assertEqual((step, vocab), (30, sorted(set(LANTERN_BAY))))
        trained = train_ddp.load_checkpoint(path("tuned.pt"))["model"]
        start, _, _ = minigpt.load_safetensors(path("embedded.safetensors"))
        self.assertEqual(set(trained), set(back.state_dict()))
        moved = 0
        for name, t in trained.items():
            self.assertTrue(torch.equal(bits(t), bits(back.state_dict()[name])), f"{name} differs after import")
            moved += not torch.equal(t, start.state_dict()[name])
        self.assertEqual(moved, len(trained), "some tensors did not train")


if __name__ == "__main__":
    unittest.main(verbosity=2)
