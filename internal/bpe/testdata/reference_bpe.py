#!/usr/bin/env python3
"""An independent byte-level BPE trainer, minbpe-style, for internal/bpe's tests.

It shares no code with the Go package: the split is GPT-2's own pattern run
by the `regex` module (which has the lookahead Go's regexp lacks), and the
training recounts every pair over the distinct pieces before each merge
(the Go code keeps the counts up to date instead). The rules it follows
are the ones internal/bpe documents:

  * pieces are the matches of GPT-2's pattern; each starts as its UTF-8 bytes;
  * a pair's count is how often it occurs inside the pieces, overlapping
    occurrences included ("aaa" holds (a, a) twice);
  * the merge is the pair with the highest count; ties go to the smaller
    left id, then the smaller right id;
  * a pair whose token would be longer than 1024 bytes is never merged;
  * the new token replaces the pair in every piece from left to right;
  * training stops when no pair is left.

Usage (from the repository's root, Debian's python3 and python3-regex):

    python3 internal/bpe/testdata/reference_bpe.py internal/bpe/testdata

It reads lanternbay.txt beside this script (a copy of minigpt.LanternBay,
which TestLanternBayCopy checks) and writes into the directory given:

    mixed.txt                 a text of many scripts, digits, whitespace and
                              contractions, from a seeded generator
    lanternbay_merges.golden  the merges of lanternbay.txt at vocabulary 1024
    mixed_merges.golden       the merges of mixed.txt at vocabulary 700
    split.golden              GPT-2's pieces of many tricky texts, JSON lines
"""

import json
import os
import random
import sys

import regex

PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
SPLIT = regex.compile(PATTERN)
MAX_TOKEN_BYTES = 1024

HEADER = """# {what}
# Written by internal/bpe/testdata/reference_bpe.py (Python {py}, regex {rx}), an
# independent minbpe-style trainer: GPT-2's pattern run by the regex module, all
# pairs recounted before every merge, ties to the smaller (left id, right id).
# Regenerate (from the repository's root):
#   python3 internal/bpe/testdata/reference_bpe.py internal/bpe/testdata
"""


def train(text, vocab_size):
    """Returns the merges, [(left, right), ...], merge r making token 256 + r."""
    counts = {}
    for piece in SPLIT.findall(text):
        counts[piece] = counts.get(piece, 0) + 1
    words = [(list(p.encode("utf-8")), n) for p, n in counts.items()]
    length = {i: 1 for i in range(256)}
    merges = []
    while 256 + len(merges) < vocab_size:
        stats = {}
        for ids, n in words:
            for pair in zip(ids, ids[1:]):
                stats[pair] = stats.get(pair, 0) + n
        stats = {p: c for p, c in stats.items() if length[p[0]] + length[p[1]] <= MAX_TOKEN_BYTES}
        if not stats:
            break
        best = max(stats, key=lambda p: (stats[p], -p[0], -p[1]))
        new = 256 + len(merges)
        length[new] = length[best[0]] + length[best[1]]
        merges.append(best)
        for k, (ids, n) in enumerate(words):
            out, i = [], 0
            while i < len(ids):
                if i + 1 < len(ids) and ids[i] == best[0] and ids[i + 1] == best[1]:
                    out.append(new)
                    i += 2
                else:
                    out.append(ids[i])
                    i += 1
            words[k] = (out, n)
    return merges


# Fragments for the generated texts: every character is in Unicode 6.0 or
# earlier, so that Python's, Go's and any other Unicode tables agree on it.
WORDS = ["the", "lamp", "keeper", "Harbour", "naïve", "café", "straße", "Ωmega",
         "жизнь", "Москва", "中文", "日本語", "한국어", "עברית", "العربية", "हिन्दी",
         "ελληνικά", "Ünïcödé", "ǅemal", "ʰaspirated", "x"]
NUMBERS = ["0", "7", "42", "2024", "3.14", "1,000", "٣٤", "½", "Ⅻ", "²", "١٢٣"]
PUNCT = [".", ",", "!", "?", "...", "--", "(", ")", "\"", "$", "%", "&", "@", "#",
         "😀", "👍🏽", "🇫🇷", "👨\u200d👩\u200d👧", "→", "€", "\u0301", "\u200b", "\ufffd"]
SPACES = [" ", " ", " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "\u00a0",
          "\u3000", "\u2028", "\u0085", "\ufeff", "\x1c", "\x0b", "\x0c"]
APOS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "'x", "'", "''", " 's", "n't"]


def fragment(rng):
    kind = rng.random()
    if kind < 0.45:
        return rng.choice(WORDS)
    if kind < 0.55:
        return rng.choice(NUMBERS)
    if kind < 0.70:
        return rng.choice(PUNCT)
    if kind < 0.90:
        return rng.choice(SPACES)
    return rng.choice(APOS)


def generated(rng, n):
    return "".join(fragment(rng) for _ in range(n))


SPLIT_CASES = [
    "", " ", "  ", "a", " a", "  a", "a ", "a  ", "\n", "\n\n", " \n", "\n ", "\na", " \na",
    "hello world", "hello  world", "hello   world", "hello\tworld", "hello \tworld",
    "don't", "DON'T", "we'll've", "it's", "'s", "'", "''", "'''s", " 's", "x's's",
    "?'s", "!!'ll", "'re'", "'ve", "'m", "'d", "'l", "'r", "'v",
    "123", " 123", "1 2 3", "a1b2", "3.14", "½", "Ⅻ", "٣٤",
    "naïve café", "e\u0301", " \u0301", "😀", " 😀", "😀😀", "a😀b", "👨\u200d👩\u200d👧",
    "\u00a0a", "a\u00a0", "\u0085", "a\u0085b", "\ufeffa", "a\ufeff", "\x1ca", "\u3000\u3000x",
    "\u2028", "a\u2028\u2028b", "\r\n", "a\r\nb", "  \n  x", "x  \n  ", "tab\t\tend\t",
    "trailing spaces   ", "   leading", "mixed \t \n end", "<|endoftext|>", "a<|endoftext|>b",
]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: reference_bpe.py OUTDIR")
    out = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    py = "%d.%d" % sys.version_info[:2]
    header = lambda what: HEADER.format(what=what, py=py, rx=regex.__version__)

    with open(os.path.join(here, "lanternbay.txt"), encoding="utf-8", newline="") as f:
        lantern = f.read()
    rng = random.Random(20240501)
    mixed = generated(rng, 6000)
    with open(os.path.join(out, "mixed.txt"), "w", encoding="utf-8", newline="") as f:
        f.write(mixed)

    for name, text, size in [("lanternbay", lantern, 1024), ("mixed", mixed, 700)]:
        merges = train(text, size)
        with open(os.path.join(out, name + "_merges.golden"), "w", encoding="utf-8", newline="\n") as f:
            f.write(header("The merges of %s.txt at vocabulary %d: one merge a line, the left and right ids." % (name, size)))
            f.write("vocab %d merges %d\n" % (size, len(merges)))
            for a, b in merges:
                f.write("%d %d\n" % (a, b))

    cases = list(SPLIT_CASES)
    for _ in range(600):
        cases.append(generated(rng, rng.randint(1, 12)))
    with open(os.path.join(out, "split.golden"), "w", encoding="utf-8", newline="\n") as f:
        f.write(header("GPT-2's pieces of tricky texts: a JSON object a line, {\"text\": ..., \"pieces\": [...]}."))
        for text in cases:
            f.write(json.dumps({"text": text, "pieces": SPLIT.findall(text)}, ensure_ascii=True) + "\n")


if __name__ == "__main__":
    main()
