// Package bpe is a byte-level byte-pair-encoding tokenizer: trained on
// any text, or loaded from GPT-2's published files, standard library
// only.
//
// # Tokens
//
// A Tokenizer starts from the 256 single bytes, so any bytes, valid
// UTF-8 or not, encode and decode back exactly. Each merge joins two
// tokens into a new one: merge r makes token 256+r, from tokens made
// before it, so every token is a tree of merges over bytes
// ([Tokenizer.Parts], [Tokenizer.Tree]) whose bytes [Tokenizer.Token]
// and [Tokenizer.TokenBytes] return. Special tokens (GPT-2's
// "<|endoftext|>") come after the merges; text never encodes to them.
//
// # Pieces
//
// Text is first split into pieces the way GPT-2 splits it ([Split],
// [Pattern]): a contraction ('s 't 're 've 'm 'll 'd), a run of letters,
// of numbers or of other characters, each with at most one leading
// space, or a run of white space, less its last character when a
// non-space follows (that space goes with the next word). Go's regexp
// has no lookahead, so the split is written out by hand; testdata's
// split.golden holds Python's regex module to it. A byte that is not
// part of valid UTF-8 counts as a character of its own in the "other"
// class, as U+FFFD would. A token never crosses from one piece to the
// next.
//
// # Training
//
// [Train] counts the distinct pieces of a text, then repeatedly merges
// the adjacent pair of tokens that occurs most often inside them
// (overlapping occurrences count: "aaa" holds (a, a) twice). Ties go to
// the pair with the smaller left id, then the smaller right id, so the
// same text and size give the same merges on every machine; a pair whose
// token would pass [MaxTokenBytes] is never merged. The counts are kept
// up to date merge by merge (only the places where the merged pair
// occurred change) and the best pair comes off a heap, so training on
// tiny Shakespeare (1.1 MB) to 4,096 tokens takes a fraction of a
// second.
//
// # Encoding
//
// [Tokenizer.Encode] encodes each piece as GPT-2's encoder does: from its
// bytes, apply the merge of lowest rank among adjacent pairs to all its
// occurrences from left to right, and repeat. [Tokenizer.Decode] joins
// the tokens' bytes.
//
// # GPT-2
//
// [LoadGPT2] reads GPT-2's encoder.json and vocab.bpe (byte-to-unicode
// mapping included) and encodes with GPT-2's exact ids; its test holds it
// to two npm tokenizers on 1,200 texts. As in GPT-2's own encoder, the
// text "<|endoftext|>" encodes as its 13 characters; its id, 50256, is
// for a caller to place between documents ([Tokenizer.SpecialID]).
//
// # Stored forms
//
// [Tokenizer.MarshalBinary] writes a compact, versioned form (merges as
// pairs of varint ids, with a CRC-32) for checkpoints and files;
// [Tokenizer.MarshalJSON] a JSON form, valid UTF-8, for safetensors
// metadata and for readers in other languages. Both are the same bytes
// for the same tokenizer. Their readers ([ReadBinary], [ReadJSON])
// check every field, never panic, and allocate at most in proportion to
// their input and within [MaxTotalBytes].
//
// A Tokenizer is immutable and safe for concurrent use.
package bpe
