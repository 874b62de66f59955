// Package grammar holds generated text to a format: a regular expression,
// a list of choices, a grammar or a JSON schema. It tells the sampler, at
// each step, exactly which tokens keep the text completable, so
// generation never reaches a dead end, and when the text is complete.
//
// # Use
//
// A compiler turns a constraint into a [Grammar], which knows nothing of
// any vocabulary: [Regex] (Go's RE2 syntax, the whole text must match),
// [Choice], [GBNF] (llama.cpp's grammar format), [JSONSchema] (the common
// subset) and [JSONObject] (any JSON object, the "json_object" response
// format). A malformed constraint is an [*Error] that names the place
// (the character index from 0, and line:column in text of several lines)
// and what is wrong.
//
// [Grammar.Bind] ties a grammar to a vocabulary, the text of each token as
// bytes, and gives a [Matcher]. Each sample keeps its own [State], a small
// value: [Matcher.Start], then at each step [Matcher.Allowed] fills the
// mask of tokens that may come next, the sampler picks one, and
// [Matcher.Advance] moves to the state after it. [Matcher.Complete] says
// the text is a whole match; [Matcher.MustEnd] that it is complete and no
// token may follow, so the sample stops (finish reason "stop"). A text
// that is complete but may go on goes on until a stop string, max_tokens
// or a state that must end. [Matcher.AllowedWithin] also drops the tokens
// after which the text could not be completed within the tokens left, so
// a sample always completes by max_tokens when [Matcher.Remaining] of the
// start fits.
//
// # Where it sits in the sampling pipeline
//
// First, before logit bias, the repetition penalties, temperature and the
// top-k, top-p and min-p filters, as vLLM and llama.cpp place their
// grammar stages: a forbidden token's logit becomes -Inf, and every later
// stage works on what the constraint allows. Placed later, a filter could
// keep only tokens the constraint forbids and leave nothing to sample; a
// bias or a penalty could not bring a forbidden token back either way,
// but then greedy decoding, beam search and the filters all see the same
// candidates. The tokens a step's mask removes are the trace's grammar
// stage.
//
// # How it works
//
// Every constraint compiles to rules, each an automaton over code points
// (the rule's body as a Thompson NFA) whose edges read one character of a
// set, call a rule, or move without reading. A regex is one rule with no
// calls. A parse position (an item) is an automaton state with the stacks
// of open calls it may return through; the stacks of a state's items are
// kept as a trie from the top, shared and interned, so that an ambiguous
// grammar's many parses cost one item per (state, depth), as a
// graph-structured stack would, and each representation depends on the
// state's content alone. A call from a state that can only end the rule
// (a tail call) opens no frame, so right recursion and chains of
// repetitions stay flat.
//
// Interned states (nodes) carry their caches: the node after each
// character class and after each allowed token, and the mask. A step in a
// state seen before is a map lookup and the copy of its mask: no
// allocation, and a cost that does not depend on how much text came
// before. A new state costs one closure (bounded by MaxItems) and, for
// its mask, a walk of the trie of token texts that stops at the first
// byte after which nothing can follow.
//
// # Why it is exact
//
// At bind time an analysis computes, for every automaton state, the
// fewest stack frames that finishing its rule from there must open,
// reading only characters the vocabulary's base units can write (a
// variant of Knuth's generalization of Dijkstra's algorithm over the
// rules). The base units are the tokens that are one whole character
// and, when every continuation byte 0x80-0xBF is a token by itself, the
// single-byte tokens, which can then finish any character a lead byte
// began. An item is kept only when its rule can be finished from its
// depth within MaxStackDepth, and a frame is pushed only under the same
// condition, so every stack of every state can be completed: a state can
// be completed exactly when it holds an item or is a whole match. (For a
// regex this is the classic rule that a DFA state, a set of NFA states,
// is alive when one of its NFA states is, the liveness of each computed
// once.) A token is allowed when the state after its bytes is alive and,
// when it ends inside a character, base units can finish that character.
//
// The mask is therefore exactly "the tokens after which the text can
// still be completed over this vocabulary" whenever every token is a
// concatenation of base units, for then base units spell every text the
// tokens do: in particular for a character vocabulary (every token one
// character, with or without longer tokens made of those characters) and
// for any vocabulary that holds all 256 single bytes (byte-level BPE).
// For any other vocabulary it is a subset of that: every allowed token
// leads to a state that base units can complete, and the first unit of
// such a completion is itself allowed, so generation still never reaches
// a dead end; but a token whose only completions need other tokens is not
// offered, and Bind may refuse a constraint only they could satisfy.
// Bind refuses, wrapping [ErrUnsatisfiable], a constraint no text
// over the vocabulary completes, and names the characters the cheapest
// way through it lacks: "the pattern needs '{', which the model never
// writes".
//
// # Caps
//
//   - [MaxSource] (64 KiB) bounds the text of a constraint, [MaxNesting]
//     (1,000, as RE2's parser) groups within groups, [MaxRepeat] (2,000,
//     llama.cpp's limit) the counts of a repetition and JSON Schema's
//     lengths, [MaxRules] the rules: compile-time memory stays linear in
//     what was sent.
//   - [MaxStates] (131,072) bounds the automaton, so that a repetition of
//     a repetition is refused instead of built.
//   - [MaxStackDepth] (1,024) bounds the rule calls open at once. Liveness
//     accounts for it, so no text that would need more is ever begun: a
//     nesting that reaches the cap is offered only its closing.
//   - [MaxItems] (16,384) bounds one state's closure, the cost of a new
//     state; past it Advance fails with [ErrTooComplex], which depends on
//     the state alone, never on what else ran.
//   - [MaxCacheBytes] (64 MiB) bounds a Matcher's cache. Past it the cache
//     is emptied and states are rebuilt on demand from their content, so
//     a pathological pattern such as (a|b)*a(a|b){20}, whose DFA has 2^21
//     states, costs time, never memory, and changes no answer.
//
// # Concurrency and determinism
//
// A Grammar is immutable. A Matcher answers for a State from its content
// alone: its cache sits behind a mutex and may be shared by any number of
// samples at once, and whether a state was cached, flushed or computed by
// another goroutine changes nothing but speed.
package grammar
