// GPT-2's token ids for internal/bpe's TestGPT2MatchesNPM, from two
// independent JavaScript tokenizers: gpt-tokenizer (a tiktoken-style
// implementation with GPT-2's ranks) and gpt-3-encoder (a port of
// GPT-2's own encoder.py). It writes a JSON array of {"text", "ids"} to
// the file named by its argument, and fails if the two disagree on a
// text.
//
//   cd internal/bpe/testdata/gpt2 && npm ci && node cases.mjs /tmp/gpt2_cases.json
//
// The texts: hand-picked ones (contractions, runs of whitespace, digits,
// many scripts, emoji whose bytes GPT-2 splits across tokens, trailing
// spaces, the text "<|endoftext|>"), then generated ones from a seeded
// generator. JavaScript's \s differs from Python's (and Go's) on U+0085
// and U+FEFF, so neither appears here; internal/bpe's split.golden pins
// them against Python's regex module.
import { writeFileSync } from 'node:fs'
import { encode } from 'gpt-tokenizer/encoding/gpt2'
import gpt3 from 'gpt-3-encoder'

const handPicked = [
  '', ' ', 'a', 'hello world', 'Hello World', ' hello', 'hello ', 'hello  ', 'hello   world',
  "don't", "I'm", "you're", "we've", "she'll", "he'd", "it's", "DON'T", "I'M", "'s", "'", "''", "'''s",
  " 's", "x's's", "rock'n'roll", "y'all'd've", "O'Neil's",
  '  ', '   ', '\t', '\t\t', '\n', '\n\n', '\r\n', ' \n ', 'a\n\nb', 'a \n b', 'x    y', 'x\t \ty',
  'trailing space ', 'trailing spaces    ', '   leading spaces', 'mixed \t\n\r whitespace \t',
  '0', '1', '12', '123', '1234', '12345678901234567890', '3.14159', '1,000,000', '-42', '$100',
  '2024-05-01', '10:30pm', '1st 2nd 3rd', '½ ¾', 'Ⅻ', '²³', '٣٤٥', '१२३', 'x1y2z3',
  'naïve café', 'Straße', 'Ωμέγα', 'жизнь', 'Москва', '中文字符', '日本語のテキスト', '한국어', 'עברית',
  'العربية', 'हिन्दी', 'ไทย', 'Ünïcödé', 'e\u0301', 'ǅemal', 'ʰ', '\u00a0', 'a\u00a0b', '\u3000x',
  '\u2028', 'a\u2028b', '\u200b', 'zero\u200bwidth',
  '😀', ' 😀', '😀😀', 'a😀b', '👍🏽', '🇫🇷', '👨\u200d👩\u200d👧', '🤔 hmm', '❤️', '✨ sparkle ✨',
  '<|endoftext|>', 'a<|endoftext|>b', '<|endoftext|> <|endoftext|>', '<|', '|>',
  'Hello, world!', '...', '?!?!', '(parens)', '"quotes"', 'email@example.com', 'https://example.com/a?b=c',
  'def f(x):\n    return x + 1\n', '{"json": [1, 2, 3]}', '<html><body>hi</body></html>',
  'The quick brown fox jumps over the lazy dog.', 'a'.repeat(100), ' '.repeat(50), '-'.repeat(80),
  'ab'.repeat(60), '\n'.repeat(10), 'the lamp keeper walks the shore at dusk. ',
]

// mulberry32: a small seeded generator, so the texts are the same on
// every run.
function mulberry32(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
const rand = mulberry32(42)
const pick = (list) => list[Math.floor(rand() * list.length)]

// Characters from Unicode 6.0 or earlier, on whose classes every Unicode
// table agrees.
const words = ['the', 'keeper', 'Lantern', 'BAY', 'fog', 'naïve', 'über', 'Ωmega', 'кот', '日本', '한', 'שלום',
  'مرحبا', 'नमस्ते', 'ελλάδα', 'x', 'I', 'a', 'Zürich', 'façade']
const numbers = ['0', '7', '42', '256', '1024', '99999', '3.5', '1,2', '٣', '½', 'Ⅳ', '²']
const punct = ['.', ',', '!', '?', ';', ':', '-', '--', '...', '(', ')', '[', ']', '"', '$', '%', '&', '*', '/', '\\',
  '😀', '🎉', '👍🏽', '🇯🇵', '👩\u200d💻', '→', '€', '©', '\u0301', '\u200b', '\ufffd', '<|endoftext|>']
const spaces = [' ', ' ', ' ', ' ', '  ', '   ', '    ', '\t', '\n', '\n\n', '\r\n', ' \n', '\n ', '\u00a0', '\u3000', '\u2028']
const apostrophes = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'x", "'", "n't", " '"]

function generated(n) {
  let s = ''
  for (let i = 0; i < n; i++) {
    const r = rand()
    s += r < 0.4 ? pick(words) : r < 0.5 ? pick(numbers) : r < 0.65 ? pick(punct) : r < 0.9 ? pick(spaces) : pick(apostrophes)
  }
  return s
}

const texts = [...handPicked]
while (texts.length < 1200) {
  texts.push(generated(1 + Math.floor(rand() * 30)))
}

const cases = []
let disagree = 0
for (const text of texts) {
  const ids = encode(text, { disallowedSpecial: new Set() }) // "<|endoftext|>" is text, as in GPT-2's encoder.py
  const other = gpt3.encode(text)
  if (JSON.stringify(ids) !== JSON.stringify(other)) {
    console.error(`gpt-tokenizer and gpt-3-encoder disagree on ${JSON.stringify(text)}: ${ids} vs ${other}`)
    disagree++
  }
  cases.push({ text, ids })
}
if (disagree > 0) {
  process.exit(1)
}
if (process.argv.length !== 3) {
  console.error('usage: node cases.mjs OUT.json')
  process.exit(2)
}
writeFileSync(process.argv[2], JSON.stringify(cases))
console.log(`${cases.length} texts, the same ids from gpt-tokenizer and gpt-3-encoder, written to ${process.argv[2]}`)
