"""minigpt's model in PyTorch, tensor for tensor the Go package's, with a
reader and a writer for its safetensors files (docs/interop.md).

The architecture is exactly minigpt's: token and position embeddings;
per layer a pre-LayerNorm block

    x = x + attn(LN1(x)) @ attn_proj_weight          (no bias)
    x = x + relu(LN2(x) @ fc_weight + fc_bias) @ fc_proj_weight + fc_proj_bias

where attn splits LN1(x) @ qkv_weight, a (C, 3C) matrix, into columns
[0, C) query, [C, 2C) key, [2C, 3C) value, runs causal softmax attention
per head scaled by 1/sqrt(C/heads), and merges the heads; then a final
LayerNorm and the head: @ head_weight + head_bias, or, tied, @ the token
embedding transposed with no bias. LayerNorm epsilon 1e-5. Weights are
stored (in, out) as in Go's slab, so the products are plain x @ W.

Parameter names are the safetensors tensor names (token_embedding,
blocks.0.qkv_weight, ...), so model.state_dict() is what the file holds.
Everything runs in float64 by default, where the logits match Go's within
1e-12 (python/test_interop.py checks it).

A model reads characters (format 1: the vocabulary is the list of its
characters, minigpt.vocab) or byte-level BPE tokens (format 2: a
minigpt_bpe.Tokenizer, whose JSON form is minigpt.tokenizer); encode and
decode work with either.

Debian ships no safetensors package: the reader and writer here are a few
lines of json and torch.frombuffer. When safetensors.torch is installed
it is used instead (that path is not exercised by python/test.sh, which
runs where it is absent).
"""

import json
import math
import os
import sys
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from minigpt_bpe import Tokenizer, TokenizerError  # noqa: E402

try:  # pragma: no cover - not installed where the tests run
    import safetensors.torch as _st
except ImportError:
    _st = None

LAYERNORM_EPS = 1e-5
FORMAT_VERSION = "1"  # the metadata's minigpt.format for a character vocabulary
FORMAT_TOKENIZER = "2"  # and for a BPE tokenizer

# The per-layer tensors in Go's slab order (Model.Tensors): each is
# blocks.<layer>.<name> in the file and in state_dict().
BLOCK_TENSORS = (
    "ln1_gain", "ln1_bias", "qkv_weight", "attn_proj_weight", "ln2_gain", "ln2_bias",
    "fc_weight", "fc_bias", "fc_proj_weight", "fc_proj_bias",
)

_DTYPES = {"F64": torch.float64, "F32": torch.float32}
_ITEMSIZE = {"F64": 8, "F32": 4}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}


class FormatError(ValueError):
    """A file that is not a minigpt safetensors file; the message names the
    tensor or metadata key at fault."""


@dataclass(frozen=True)
class Config:
    """The shape of a model: Go's minigpt.Config."""

    vocab_size: int
    block_size: int = 32
    embed_dim: int = 64
    heads: int = 4
    layers: int = 2
    tied_head: bool = False

    def validate(self):
        for name in ("vocab_size", "block_size", "embed_dim", "heads", "layers"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"config {name} {v!r} must be a positive integer")
        if self.vocab_size < 2:
            raise ValueError(f"config vocab_size {self.vocab_size} must be at least 2")
        if self.embed_dim % self.heads:
            raise ValueError(f"config embed_dim {self.embed_dim} is not divisible by {self.heads} heads")


def _layer_norm(x, gain, bias):
    return F.layer_norm(x, (x.shape[-1],), gain, bias, eps=LAYERNORM_EPS)


class Block(nn.Module):
    """One pre-LayerNorm transformer block; its parameters are named and
    shaped as Go's per-layer tensors."""

    def __init__(self, cfg, dtype):
        super().__init__()
        C = cfg.embed_dim
        self.heads = cfg.heads

        def p(*shape):
            return nn.Parameter(torch.empty(*shape, dtype=dtype))

        # Declared in BLOCK_TENSORS order, so that state_dict() lists them so.
        self.ln1_gain, self.ln1_bias = p(C), p(C)
        self.qkv_weight = p(C, 3 * C)  # columns [0,C) query, [C,2C) key, [2C,3C) value
        self.attn_proj_weight = p(C, C)
        self.ln2_gain, self.ln2_bias = p(C), p(C)
        self.fc_weight, self.fc_bias = p(C, 4 * C), p(4 * C)
        self.fc_proj_weight, self.fc_proj_bias = p(4 * C, C), p(C)

    def forward(self, x, mask):
        B, T, C = x.shape
        nh, hs = self.heads, C // self.heads
        q, k, v = (_layer_norm(x, self.ln1_gain, self.ln1_bias) @ self.qkv_weight).split(C, dim=-1)
        q, k, v = (t.view(B, T, nh, hs).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = torch.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ self.attn_proj_weight
        h = torch.relu(_layer_norm(x, self.ln2_gain, self.ln2_bias) @ self.fc_weight + self.fc_bias)
        return x + h @ self.fc_proj_weight + self.fc_proj_bias


class MiniGPT(nn.Module):
    """minigpt's model. forward(idx) returns the (B, T, V) logits, and with
    targets also the mean cross-entropy over every position."""

    def __init__(self, cfg, dtype=torch.float64):
        super().__init__()
        cfg.validate()
        self.config = cfg
        V, T, C = cfg.vocab_size, cfg.block_size, cfg.embed_dim
        self.token_embedding = nn.Parameter(torch.empty(V, C, dtype=dtype))
        self.position_embedding = nn.Parameter(torch.empty(T, C, dtype=dtype))
        self.blocks = nn.ModuleList(Block(cfg, dtype) for _ in range(cfg.layers))
        self.lnf_gain = nn.Parameter(torch.empty(C, dtype=dtype))
        self.lnf_bias = nn.Parameter(torch.empty(C, dtype=dtype))
        if not cfg.tied_head:
            self.head_weight = nn.Parameter(torch.empty(C, V, dtype=dtype))
            self.head_bias = nn.Parameter(torch.empty(V, dtype=dtype))
        self.init_weights(torch.Generator().manual_seed(0))

    def init_weights(self, generator):
        """minigpt's initialisation (not its random numbers): weights and
        embeddings N(0, 0.02²), gains 1, biases 0."""
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("_gain"):
                    p.fill_(1)
                elif name.endswith("_bias"):
                    p.zero_()
                else:
                    p.copy_(torch.randn(p.shape, generator=generator, dtype=torch.float64) * 0.02)

    def decays(self, name):
        """Whether AdamW's weight decay applies to the parameter (Go's rule:
        matrices and embeddings, never gains or biases)."""
        return name.endswith("_weight") or name.endswith("_embedding")

    def forward(self, idx, targets=None):
        B, T = idx.shape
        if T > self.config.block_size:
            raise ValueError(f"sequence of {T} tokens is longer than the block size {self.config.block_size}")
        x = self.token_embedding[idx] + self.position_embedding[:T]
        # Made here, not kept as a buffer: DDP would broadcast a buffer, and
        # gloo cannot broadcast booleans.
        mask = torch.ones(T, T, dtype=torch.bool, device=idx.device).triu(1)
        for blk in self.blocks:
            x = blk(x, mask)
        x = _layer_norm(x, self.lnf_gain, self.lnf_bias)
        if self.config.tied_head:
            logits = x @ self.token_embedding.t()
        else:
            logits = x @ self.head_weight + self.head_bias
        if targets is None:
            return logits
        return logits, F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))


# --- safetensors -----------------------------------------------------------

def tensor_names(cfg):
    """The file's tensor names in the order Go's WriteSafetensors stores
    them (state_dict() lists a module's own parameters before its blocks')."""
    names = ["token_embedding", "position_embedding"]
    names += [f"blocks.{l}.{n}" for l in range(cfg.layers) for n in BLOCK_TENSORS]
    names += ["lnf_gain", "lnf_bias"]
    if not cfg.tied_head:
        names += ["head_weight", "head_bias"]
    return names


def encode(vocab, text):
    """The token ids of text: a character vocabulary's (every character
    must be in it) or a BPE tokenizer's."""
    if isinstance(vocab, Tokenizer):
        return vocab.encode(text)
    index = {c: i for i, c in enumerate(vocab)}
    return [index[c] for c in text]


def decode(vocab, ids):
    """The text of the token ids."""
    if isinstance(vocab, Tokenizer):
        return vocab.decode(ids)
    return "".join(vocab[i] for i in ids)


def metadata(cfg, vocab, step):
    """The __metadata__ of a minigpt file, in the order Go writes it:
    format 1 with the characters, format 2 with a BPE tokenizer's JSON
    form in their place."""
    bpe = isinstance(vocab, Tokenizer)
    return {
        "format": "pt",
        "minigpt.format": FORMAT_TOKENIZER if bpe else FORMAT_VERSION,
        "minigpt.vocab_size": str(cfg.vocab_size),
        "minigpt.block_size": str(cfg.block_size),
        "minigpt.embed_dim": str(cfg.embed_dim),
        "minigpt.heads": str(cfg.heads),
        "minigpt.layers": str(cfg.layers),
        "minigpt.tied_head": "true" if cfg.tied_head else "false",
        **({"minigpt.tokenizer": vocab.to_json()} if bpe else {"minigpt.vocab": "".join(vocab)}),
        "minigpt.step": str(step),
    }


def _no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise FormatError(f"header: {k!r} occurs twice")
        d[k] = v
    return d


def read_safetensors(path):
    """Reads any safetensors file of F64 and F32 tensors: returns
    ({name: tensor}, metadata), refusing overlaps, holes and sizes that
    disagree with shapes."""
    if _st is not None:  # pragma: no cover
        from safetensors import safe_open
        with safe_open(path, framework="pt") as f:
            return {k: f.get_tensor(k) for k in f.keys()}, dict(f.metadata() or {})
    if sys.byteorder != "little":  # pragma: no cover
        raise RuntimeError("this reader assumes a little-endian machine")
    with open(path, "rb") as f:
        data = bytearray(f.read())  # writable: torch.frombuffer warns on bytes
    if len(data) < 8:
        raise FormatError(f"{path}: truncated: {len(data)} bytes, the header length alone is 8")
    n = int.from_bytes(data[:8], "little")
    if n > len(data) - 8:
        raise FormatError(f"{path}: header length {n} is past the end of the file ({len(data)} bytes)")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FormatError(f"{path}: header: {e}") from None
    meta = header.pop("__metadata__", None) or {}
    buf = memoryview(data)[8 + n:]
    spans = []
    for name, e in header.items():
        if set(e) != {"dtype", "shape", "data_offsets"} or e["dtype"] not in _DTYPES:
            raise FormatError(f"{path}: tensor {name!r}: entry {e!r} is not an F64 or F32 tensor")
        begin, end = e["data_offsets"]
        count = math.prod(e["shape"])
        if end - begin != count * _ITEMSIZE[e["dtype"]]:
            raise FormatError(f"{path}: tensor {name!r}: data_offsets {e['data_offsets']} disagree with shape {e['shape']} of {e['dtype']}")
        spans.append((begin, end, name))
    pos = 0
    for begin, end, name in sorted(spans):
        if begin != pos:
            raise FormatError(f"{path}: tensor {name!r} starts at byte {begin} of the data, want {pos} (no holes, no overlaps)")
        pos = end
    if pos != len(buf):
        raise FormatError(f"{path}: the tensors cover {pos} bytes of the data, the file holds {len(buf)}")
    tensors = {}
    for name, e in header.items():
        begin, end = e["data_offsets"]
        t = torch.frombuffer(buf[begin:end], dtype=_DTYPES[e["dtype"]]) if end > begin else torch.empty(0, dtype=_DTYPES[e["dtype"]])
        tensors[name] = t.reshape(e["shape"]).clone()
    return tensors, meta


def _publish(tmp, path, overwrite):
    if overwrite:
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)  # fails if path exists: a file that appeared is kept
    finally:
        os.remove(tmp)


def save_file_atomic(path, write, overwrite=False):
    """Writes a file as Go's minigpt.SaveFile does: into .NAME.tmp-minigpt
    beside it, synced, then renamed (or, without overwrite, linked, which
    refuses an existing file). Anything but a regular file at path is
    refused."""
    if os.path.lexists(path):
        if not os.path.isfile(path) or os.path.islink(path):
            raise FileExistsError(f"{path}: not a regular file; it is never replaced")
        if not overwrite:
            raise FileExistsError(f"{path}: the file exists (pass --force to replace it)")
    d, base = os.path.split(path)
    tmp = os.path.join(d, "." + base + ".tmp-minigpt")
    if os.path.lexists(tmp):
        os.remove(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        _publish(tmp, path, overwrite)
    except BaseException:
        if os.path.lexists(tmp):
            os.remove(tmp)
        raise
    dfd = os.open(d or ".", os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def write_safetensors(path, tensors, meta, overwrite=False):
    """Writes {name: tensor} (F64 or F32, in the dict's order, no gaps) and
    the metadata strings, the header padded with spaces to a multiple of 8
    bytes, as Go's WriteSafetensors does."""
    tensors = {k: v.detach().to("cpu").contiguous() for k, v in tensors.items()}
    if _st is not None:  # pragma: no cover
        save_file_atomic(path, lambda f: f.write(_st.save(tensors, metadata=meta)), overwrite)
        return
    header = {"__metadata__": meta}
    off = 0
    for name, t in tensors.items():
        if t.dtype not in _DTYPE_NAMES:
            raise ValueError(f"tensor {name!r} is {t.dtype}, want float64 or float32")
        nbytes = t.numel() * t.element_size()
        header[name] = {"dtype": _DTYPE_NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + nbytes]}
        off += nbytes
    h = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    h += b" " * (-len(h) % 8)

    def write(f):
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for t in tensors.values():
            f.write(t.numpy().tobytes())

    save_file_atomic(path, write, overwrite)


def _meta_int(meta, key):
    v = meta.get(key)
    if not isinstance(v, str) or not v.isdigit() or str(int(v)) != v:
        raise FormatError(f"metadata {key!r} is {v!r}, not a non-negative decimal integer")
    return int(v)


def load_safetensors(path, dtype=torch.float64, device="cpu"):
    """Reads a minigpt safetensors file (from cmd/export or save_safetensors)
    into a MiniGPT: returns (model, vocab, step), vocab the list of
    characters in token-id order (format 1) or the BPE Tokenizer (format
    2). Names, shapes and finite values are checked; F32 tensors are
    widened to dtype."""
    tensors, meta = read_safetensors(path)
    fmt = meta.get("minigpt.format")
    if fmt not in (FORMAT_VERSION, FORMAT_TOKENIZER):
        raise FormatError(f"{path}: metadata minigpt.format is {fmt!r}, want {FORMAT_VERSION!r} or {FORMAT_TOKENIZER!r}: not a minigpt file?")
    known = set(metadata(Config(vocab_size=2), [], 0)) | {"minigpt.tokenizer"}
    for k in meta:
        if k.startswith("minigpt.") and k not in known:
            raise FormatError(f"{path}: metadata {k!r}: not a key of minigpt's format")
    want, other = ("minigpt.tokenizer", "minigpt.vocab") if fmt == FORMAT_TOKENIZER else ("minigpt.vocab", "minigpt.tokenizer")
    if other in meta or want not in meta:
        raise FormatError(f"{path}: metadata: format {fmt} has {want} and no {other}")
    tied = meta.get("minigpt.tied_head")
    if tied not in ("true", "false"):
        raise FormatError(f"{path}: metadata minigpt.tied_head is {tied!r}, want 'true' or 'false'")
    cfg = Config(
        vocab_size=_meta_int(meta, "minigpt.vocab_size"),
        block_size=_meta_int(meta, "minigpt.block_size"),
        embed_dim=_meta_int(meta, "minigpt.embed_dim"),
        heads=_meta_int(meta, "minigpt.heads"),
        layers=_meta_int(meta, "minigpt.layers"),
        tied_head=tied == "true",
    )
    if fmt == FORMAT_TOKENIZER:
        try:
            vocab = Tokenizer.from_json(meta["minigpt.tokenizer"])
        except TokenizerError as e:
            raise FormatError(f"{path}: metadata minigpt.tokenizer: {e}") from None
        if len(vocab) != cfg.vocab_size:
            raise FormatError(f"{path}: metadata minigpt.tokenizer has {len(vocab)} tokens, minigpt.vocab_size says {cfg.vocab_size}")
    else:
        vocab = list(meta["minigpt.vocab"])
        if len(vocab) != cfg.vocab_size or vocab != sorted(set(vocab)):
            raise FormatError(f"{path}: metadata minigpt.vocab: want {cfg.vocab_size} distinct characters in ascending order")
    step = _meta_int(meta, "minigpt.step")
    model = MiniGPT(cfg, dtype=dtype)
    want = model.state_dict()
    for name in tensors:
        if name not in want:
            raise FormatError(f"{path}: tensor {name!r}: not a tensor of this config's model")
    for name, p in want.items():
        if name not in tensors:
            raise FormatError(f"{path}: tensor {name!r}: missing")
        t = tensors[name]
        if tuple(t.shape) != tuple(p.shape):
            raise FormatError(f"{path}: tensor {name!r}: shape {list(t.shape)}, the config implies {list(p.shape)}")
        if not torch.isfinite(t).all():
            raise FormatError(f"{path}: tensor {name!r}: holds a value that is not finite")
    model.load_state_dict({k: v.to(dtype) for k, v in tensors.items()}, strict=True)
    return model.to(device), vocab, step


def save_safetensors(path, model, vocab, step, dtype=torch.float64, overwrite=False):
    """Writes model (with its vocabulary, characters or a Tokenizer, and
    step) as a minigpt safetensors file that cmd/import reads, every tensor as dtype (float64: every bit;
    float32: rounded)."""
    cfg = model.config
    if len(vocab) != cfg.vocab_size:
        raise ValueError(f"vocabulary of {len(vocab)} tokens for a model of vocab size {cfg.vocab_size}")
    state, tensors = model.state_dict(), {}
    for name in tensor_names(cfg):
        t = state[name].detach().to("cpu")
        if not torch.isfinite(t).all():
            raise ValueError(f"tensor {name!r} holds a value that is not finite")
        tensors[name] = t.to(dtype)
    write_safetensors(path, tensors, metadata(cfg, vocab, step), overwrite=overwrite)
