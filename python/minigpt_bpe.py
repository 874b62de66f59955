"""minigpt's byte-level BPE tokenizer in Python: the tokenizer of a model
stored in a safetensors file of format 2 (docs/interop.md), which encodes
text to the ids Go's internal/bpe gives and decodes them back.

A tokenizer is the 256 single bytes (ids 0 to 255: the bytes in order, or
"byte_order" says which byte each is), one token a merge (merge r joins
tokens merges[r] into token 256 + r), then the special tokens. Text is
split as GPT-2 splits it, by the regular expression the JSON form carries
(its "pattern", always GPT-2's), here with the regex module (Debian's
python3-regex), since Python's re has no \\p{L}; each piece is encoded
from its bytes by applying the merge of lowest rank among adjacent pairs
to all its occurrences from left to right, again and again, and no token
spans two pieces. Only the standard library and regex are used.
"""

import json

FORMAT = "minigpt-bpe"
VERSION = 1
NUM_BYTES = 256
# GPT-2's split in the regex module's syntax: Go's bpe.Pattern, which the
# JSON form must carry.
PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
# Go's bpe limits: MaxVocabSize, MaxTokenBytes, MaxSpecials.
MAX_VOCAB_SIZE = 1 << 17
MAX_TOKEN_BYTES = 1024
MAX_SPECIALS = 256


class TokenizerError(ValueError):
    """A JSON form that does not describe a valid tokenizer."""


class Tokenizer:
    """A byte-level BPE tokenizer read from its JSON form (from_json)."""

    def __init__(self, merges, byte_order=None, specials=()):
        self.merges = [tuple(m) for m in merges]
        self.byte_order = list(byte_order) if byte_order is not None else None
        self.specials = list(specials)
        order = self.byte_order if self.byte_order is not None else range(NUM_BYTES)
        self._byte_id = {b: i for i, b in enumerate(order)}
        self._bytes = [bytes([b]) for b in order]
        for left, right in self.merges:
            self._bytes.append(self._bytes[left] + self._bytes[right])
        self._bytes += [s.encode("utf-8") for s in self.specials]
        self._rank = {m: r for r, m in enumerate(self.merges)}
        self._cache = {}
        self._split = None

    def __len__(self):
        return NUM_BYTES + len(self.merges) + len(self.specials)

    def __eq__(self, other):
        return isinstance(other, Tokenizer) and (self.merges, self.byte_order, self.specials) == (other.merges, other.byte_order, other.specials)

    def __repr__(self):
        special = f", {len(self.specials)} special" if self.specials else ""
        return f"<byte-level BPE, {len(self)} tokens ({len(self.merges)} merges{special})>"

    @classmethod
    def from_json(cls, data):
        """Reads the JSON form Go's Tokenizer.MarshalJSON writes (the
        minigpt.tokenizer metadata), checking it as Go's ReadJSON does."""
        try:
            f = json.loads(data)
        except json.JSONDecodeError as e:
            raise TokenizerError(f"not JSON: {e}") from None
        if not isinstance(f, dict):
            raise TokenizerError("not a JSON object")
        unknown = set(f) - {"format", "version", "pattern", "byte_order", "merges", "special"}
        if unknown:
            raise TokenizerError(f"unknown field {sorted(unknown)[0]!r}")
        if f.get("format") != FORMAT:
            raise TokenizerError(f"format {f.get('format')!r}, want {FORMAT!r}")
        if f.get("version") != VERSION:
            raise TokenizerError(f"version {f.get('version')!r}; this reader knows version {VERSION}")
        if f.get("pattern") != PATTERN:
            raise TokenizerError(f"pattern {f.get('pattern')!r}, want GPT-2's")
        merges = f.get("merges")
        if not isinstance(merges, list) or len(merges) > MAX_VOCAB_SIZE - NUM_BYTES:
            raise TokenizerError("merges: want a list of at most %d pairs" % (MAX_VOCAB_SIZE - NUM_BYTES))
        lengths = [1] * NUM_BYTES
        for r, m in enumerate(merges):
            if not (isinstance(m, list) and len(m) == 2 and all(type(i) is int and 0 <= i < NUM_BYTES + r for i in m)):
                raise TokenizerError(f"merges[{r}] is {m!r}: want two ids of tokens made before it (below {NUM_BYTES + r})")
            lengths.append(lengths[m[0]] + lengths[m[1]])
            if lengths[-1] > MAX_TOKEN_BYTES:
                raise TokenizerError(f"merges[{r}] makes a token of {lengths[-1]} bytes, more than {MAX_TOKEN_BYTES}")
        order = f.get("byte_order")
        if order is not None and (not isinstance(order, list) or any(type(b) is not int for b in order) or sorted(order) != list(range(NUM_BYTES))):
            raise TokenizerError("byte_order: want each of the 256 bytes once")
        special = f.get("special") or {}
        if not isinstance(special, dict) or len(special) > MAX_SPECIALS:
            raise TokenizerError(f"special: want an object of at most {MAX_SPECIALS} tokens")
        first = NUM_BYTES + len(merges)
        names = [None] * len(special)
        for name, i in special.items():
            if type(i) is not int or not first <= i < first + len(names) or names[i - first] is not None or not name:
                raise TokenizerError(f"special token {name!r} has id {i!r}: the special ids must be {first} to {first + len(names) - 1}, one each")
            names[i - first] = name
        if first + len(names) > MAX_VOCAB_SIZE:
            raise TokenizerError(f"{first + len(names)} tokens, more than {MAX_VOCAB_SIZE}")
        return cls(merges, order, names)

    def to_json(self):
        """The JSON form, the same bytes Go's MarshalJSON writes."""
        f = {"format": FORMAT, "version": VERSION, "pattern": PATTERN}
        if self.byte_order is not None and self.byte_order != list(range(NUM_BYTES)):
            f["byte_order"] = self.byte_order
        f["merges"] = [list(m) for m in self.merges]
        if self.specials:
            first = NUM_BYTES + len(self.merges)
            f["special"] = {name: first + i for i, name in sorted(enumerate(self.specials), key=lambda p: p[1])}
        return json.dumps(f, separators=(",", ":"), ensure_ascii=False)

    def token_bytes(self, i):
        """The bytes of token i."""
        return self._bytes[i]

    def split(self, text):
        """The pieces of text by GPT-2's pattern."""
        if self._split is None:
            try:
                import regex
            except ImportError:
                raise ImportError("encoding with a BPE tokenizer needs the regex module (Debian: apt-get install python3-regex)") from None
            self._split = regex.compile(PATTERN)
        return self._split.findall(text)

    def encode(self, text):
        """The token ids of text (a str)."""
        ids = []
        for piece in self.split(text):
            got = self._cache.get(piece)
            if got is None:
                got = self._encode_piece(piece.encode("utf-8"))
                if len(self._cache) < 1 << 16:
                    self._cache[piece] = got
            ids += got
        return ids

    def _encode_piece(self, b):
        ids = [self._byte_id[x] for x in b]
        while len(ids) > 1:
            best = min((self._rank.get(p, len(self.merges)) for p in zip(ids, ids[1:])), default=len(self.merges))
            if best == len(self.merges):
                break
            left, right = self.merges[best]
            out, i = [], 0
            while i < len(ids):
                if i + 1 < len(ids) and ids[i] == left and ids[i + 1] == right:
                    out.append(NUM_BYTES + best)
                    i += 2
                else:
                    out.append(ids[i])
                    i += 1
            ids = out
        return ids

    def decode_bytes(self, ids):
        """The bytes of the tokens ids, joined."""
        for i in ids:
            if not 0 <= i < len(self._bytes):
                raise ValueError(f"token id {i} is outside the vocabulary [0, {len(self._bytes)})")
        return b"".join(self._bytes[i] for i in ids)

    def decode(self, ids):
        """The text of the tokens ids; bytes that are not UTF-8 (a sample
        that ends inside a character) become U+FFFD."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")
