"""The interop tests of issue 29 (python/test.sh runs them; docs/interop.md):
logits parity with Go, Python's files against Go's byte for byte, DDP on 1
and 2 processes, resuming, and the whole path export -> torchrun ->
import -> generate with the weights checked bit for bit; and of issue 42:
a BPE model's logits, its tokenizer's ids on many texts, and its files
(safetensors format 2) both ways.

Go's commands come from $MINIGPT_BIN (test.sh builds them there) or are
built into a temporary directory.
"""

import json
import os
import re
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
        subprocess.run(["go", "build", "-o", BIN + "/", "./cmd/export", "./cmd/import", "./cmd/generate", "./cmd/train", "./cmd/tokenize"],
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
    r = subprocess.run([os.path.join(BIN, cmd), *args], capture_output=True)
    # A BPE model's sample may hold bytes that are no character.
    stdout, stderr = (b.decode("utf-8", errors="replace") for b in (r.stdout, r.stderr))
    if r.returncode != 0:
        raise AssertionError(f"{cmd} {' '.join(args)}: exit {r.returncode}: {stderr}")
    return stdout


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


# A corpus for BPE models: Lantern Bay's sentences and words of two-,
# three- and four-byte characters.
BPE_CORPUS = (LANTERN_BAY[:490] + "naïve café über straße — “quoted” don't we'll 3.14 🙂 ") * 10

# Texts whose encoding Python and Go must agree on: contractions, runs of
# white space, digits, punctuation, Unicode letters and marks, emoji (four
# bytes each, split across tokens), and GPT-2's special token's text.
BPE_TEXTS = [
    "the lamp keeper walks the shore at dusk.",
    "don't we'll they're I've she'd it's 'll 'S",
    "   leading spaces, trailing spaces   ",
    "tabs\tand\nnew\n\n\nlines\r\n  \n",
    "3.14159 and 2026-12-01, 1000000 boats; ½ ² ٣",
    "naïve café über straße — “quoted” «guillemets»",
    "Ελληνικά, русский, 日本語のテキスト, 한국어",
    "e\u0301 combining, \u200bzero width, \u00a0no-break space",
    "🙂🙃 emoji 👩‍👩‍👧 families, 🏳️‍🌈 flags",
    "<|endoftext|> is text here",
    "!!!???...---***",
    "x" * 300,
    " ",
    "",
]


class BPE(unittest.TestCase):
    """A BPE model trained by Go: its logits, its tokenizer's ids and its
    safetensors file (format 2) in Python, and Python's files in Go."""

    @classmethod
    def setUpClass(cls):
        corpus = path("bpe-corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            f.write(BPE_CORPUS)
        if not os.path.exists(path("bpe.ckpt")):
            go("train", "-corpus", corpus, "-tokenizer", "bpe", "-vocab-size", "420", "-steps", "40", "-batch", "8",
               "-block", "24", "-embd", "32", "-heads", "2", "-eval-batches", "2", "-weights-only", "-out", path("bpe.ckpt"))
        cls.prompt = "naïve café: don't 🙂 the keeper"
        go("export", "-model", path("bpe.ckpt"), "-out", path("bpe.safetensors"), "-logits", path("bpe.json"),
           "-logits-prompt", cls.prompt, "-force")

    def test_logits(self):
        """The logits of a prompt with multi-byte characters, on the ids
        Python's encoder gives, are Go's within 1e-12."""
        model, tok, _ = minigpt.load_safetensors(path("bpe.safetensors"))
        self.assertIsInstance(tok, minigpt.Tokenizer)
        self.assertEqual(len(tok), 420)
        with open(path("bpe.json")) as f:
            want = json.load(f)
        self.assertEqual(minigpt.encode(tok, self.prompt), want["tokens"])
        self.assertEqual(minigpt.decode(tok, want["tokens"]), self.prompt)
        self.assertLess(len(want["tokens"]), len(self.prompt.encode()), "no merge applies to the prompt")
        with torch.no_grad():
            got = model(torch.tensor([want["tokens"]]))[0]
        ref = torch.tensor(want["logits"], dtype=torch.float64)
        rel = ((got - ref).abs() / ref.abs().clamp(min=1.0)).max().item()
        print(f"\n  bpe.safetensors: {len(want['tokens'])} tokens, {ref.numel()} logits, max scaled error {rel:.3g}", file=sys.stderr)
        self.assertLessEqual(rel, 1e-12)

    def test_encoding_equals_gos(self):
        """Python's encoder gives Go's ids (tokenize -model -ids) on every
        text of BPE_TEXTS and on the corpus, and decodes them back."""
        _, tok, _ = minigpt.load_safetensors(path("bpe.safetensors"))
        merged = 0
        for i, text in enumerate(BPE_TEXTS + [BPE_CORPUS]):
            f = path(f"text{i}.txt")
            with open(f, "w", encoding="utf-8", newline="") as out:
                out.write(text)
            ids = [int(x) for x in go("tokenize", "-model", path("bpe.ckpt"), "-text-file", f, "-ids").split()]
            self.assertEqual(tok.encode(text), ids, f"text {i}: {text!r}")
            self.assertEqual(tok.decode(ids), text)
            merged += sum(id >= 256 for id in ids)
        self.assertGreater(merged, 100, "the merges hardly apply: the comparison checks little")

    def test_python_writes_gos_bytes(self):
        """Loaded and saved again by Python, Go's export of a BPE model is
        the same file, in F64 and F32."""
        model, tok, step = minigpt.load_safetensors(path("bpe.safetensors"))
        minigpt.save_safetensors(path("bpe-py64.safetensors"), model, tok, step, overwrite=True)
        go("export", "-model", path("bpe.ckpt"), "-out", path("bpe-go32.safetensors"), "-dtype", "F32", "-force")
        minigpt.save_safetensors(path("bpe-py32.safetensors"), model, tok, step, dtype=torch.float32, overwrite=True)
        for py, ref in (("bpe-py64", "bpe"), ("bpe-py32", "bpe-go32")):
            self.assertTrue(read(path(py + ".safetensors"), "rb") == read(path(ref + ".safetensors"), "rb"), f"{py} differs from Go's {ref}")

    def test_go_reads_pythons_tokenizer(self):
        """A tokenizer made in Python (merges by hand, a special token)
        and a model over it: Go imports the file, encodes as Python does
        and gives the file back the same."""
        # (h,e) -> 256 "he", (t,256) -> 257 "the", (' ',257) -> 258 " the", then <|endoftext|> 259.
        tok = minigpt.Tokenizer([[104, 101], [116, 256], [32, 257]], specials=["<|endoftext|>"])
        cfg = minigpt.Config(vocab_size=len(tok), block_size=8, embed_dim=8, heads=2, layers=1)
        model = minigpt.MiniGPT(cfg)
        model.init_weights(torch.Generator().manual_seed(5))
        minigpt.save_safetensors(path("pybpe.safetensors"), model, tok, 3, overwrite=True)
        go("import", "-in", path("pybpe.safetensors"), "-out", path("pybpe.ckpt"), "-force")
        text = "the theme: then the end"
        self.assertEqual(tok.encode(text), [257, 258, 109, 101, 58, 258, 110, 258, 32, 101, 110, 100])
        ids = [int(x) for x in go("tokenize", "-model", path("pybpe.ckpt"), "-text", text, "-ids").split()]
        self.assertEqual(ids, tok.encode(text))
        info = go("generate", "-model", path("pybpe.ckpt"), "-info")
        self.assertIn("byte-level BPE, 260 tokens (3 merges, 1 special)", info)
        out = go("generate", "-model", path("pybpe.ckpt"), "-prompt", "the", "-n", "5", "-greedy")
        self.assertTrue(out.startswith("the"), out)
        go("export", "-model", path("pybpe.ckpt"), "-out", path("pybpe2.safetensors"), "-force")
        self.assertTrue(read(path("pybpe2.safetensors"), "rb") == read(path("pybpe.safetensors"), "rb"), "Go's export differs from Python's file")

    def test_reader_refuses(self):
        """A tokenizer that is not one, or not the model's size, is refused
        naming the key."""
        good = read(path("bpe.safetensors"), "rb")
        n = int.from_bytes(good[:8], "little")
        header = good[8:8 + n].decode()
        cases = {
            "a merge of a later token": re.sub(r'(\\"merges\\":\[\[)\d+', r"\g<1>300", header, count=1),
            "another pattern": header.replace(r"(?!\\\\S)", "", 1),
            "another size": header.replace('"minigpt.vocab_size":"420"', '"minigpt.vocab_size":"421"', 1),
            "format 1": header.replace('"minigpt.format":"2"', '"minigpt.format":"1"', 1),
        }
        for name, h in cases.items():
            self.assertNotEqual(h, header, name)
            h = h.encode()
            h += b" " * (-len(h) % 8)
            with open(path("bad.safetensors"), "wb") as f:
                f.write(len(h).to_bytes(8, "little") + h + good[8 + n:])
            with self.assertRaises(minigpt.FormatError, msg=name):
                minigpt.load_safetensors(path("bad.safetensors"))

    def test_train_ddp_continues_a_bpe_model(self):
        """train_ddp.py fine-tunes Go's BPE model on the text encoded by
        its tokenizer, and Go generates with the result."""
        r = train_plain("--init", path("bpe.safetensors"), "--text", path("bpe-corpus.txt"), "--steps", "5", "--batch", "4",
                        "--quiet", "--out", path("bpe-tuned.safetensors"), "--force")
        self.assertEqual(r.returncode, 0, r.stderr)
        tuned, tok, step = minigpt.load_safetensors(path("bpe-tuned.safetensors"))
        start, tok0, _ = minigpt.load_safetensors(path("bpe.safetensors"))
        self.assertEqual((tok, step), (tok0, 5))
        self.assertFalse(torch.equal(tuned.token_embedding, start.token_embedding), "the embedding did not train")
        go("import", "-in", path("bpe-tuned.safetensors"), "-out", path("bpe-tuned.ckpt"), "-force")
        out = go("generate", "-model", path("bpe-tuned.ckpt"), "-prompt", "naïve ", "-n", "20", "-seed", "3")
        self.assertTrue(out.startswith("naïve "), out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
