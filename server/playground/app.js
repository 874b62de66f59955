// minigpt playground: plain JavaScript, no build step, no external
// resource. Generated text is always inserted with textContent, never as
// HTML. Every URL is relative, so the page works wherever the server is
// mounted. This file owns what every tab shares (the models, the knobs,
// errors in a learner's words, a token's label) and the wiring;
// generate.js (with format.js), compare.js, score.js, tokenize.js and
// train.js own one tab each. They are classic scripts loaded
// with defer, so they share one global scope and run in order before
// DOMContentLoaded, when init wires them together.
"use strict";

// The knobs, in the sampler's pipeline order, with what each one does.
const KNOBS = [
  { name: "temperature", min: 0, max: 2, step: 0.05, value: 1, off: null,
    what: "divides the logits: below 1 sharpens, above 1 flattens; 0 is greedy" },
  { name: "top_k", min: 0, max: 24, step: 1, value: 0, off: 0,
    what: "keeps only the k most likely characters; 0 = off" },
  { name: "top_p", min: 0.01, max: 1, step: 0.01, value: 1, off: 1,
    what: "keeps the smallest set whose probability reaches p; 1 = off" },
  { name: "min_p", min: 0, max: 1, step: 0.01, value: 0, off: 0,
    what: "drops characters below min_p × the top one's probability; 0 = off" },
  { name: "repetition_penalty", min: 1, max: 2, step: 0.05, value: 1, off: 1,
    what: "shrinks the logits of characters already in the text; 1 = off" },
  { name: "presence_penalty", min: -2, max: 2, step: 0.1, value: 0, off: 0,
    what: "subtracts this from the logit of every character already generated" },
  { name: "frequency_penalty", min: -2, max: 2, step: 0.1, value: 0, off: 0,
    what: "subtracts this once per earlier occurrence in the generated text" },
  { name: "no_repeat_ngram_size", min: 0, max: 12, step: 1, value: 0, off: 0,
    what: "bans a character that would repeat an n-gram of the text; 0 = off" },
  { name: "num_beams", min: 0, max: 16, step: 1, value: 0, off: 0,
    what: "beam search instead of sampling: deterministic, keeps the penalties and the bias; no per-character view; 0 = off" },
];

// Why a knob does nothing in a mode: the server refuses what would be
// ignored, and the page disables it first, saying why.
const WHY_BEAMS = "no effect with beam search, which keeps the most likely sequences instead of sampling";
const WHY_GREEDY_FILTER = "no effect with temperature 0 (greedy): the most likely character always passes this filter";
const WHY_GREEDY_LOGITS = "no effect with temperature 0 (greedy), which takes the most likely character of the raw logits";
const WHY_NO_DRAW = "greedy decoding and beam search draw nothing at random";

// The lessons' strategy comparison.
const STRATEGIES = [
  { label: "greedy", params: { temperature: 0 } },
  { label: "temperature=0.8", params: { temperature: 0.8 } },
  { label: "top_k=5", params: { temperature: 1, top_k: 5 } },
  { label: "top_p=0.9", params: { temperature: 1, top_p: 0.9 } },
  { label: "temperature=1.5", params: { temperature: 1.5 } },
];

// Attention weights ride along with a generation only while the trace
// stays this small (floats, layers × heads × context per character).
const MAX_ATTENTION_FLOATS = 300000;

const $ = (id) => document.getElementById(id);
const state = {
  models: [], model: null, abort: null, steps: [], tokens: [], promptLen: 0, selected: null, apiKey: "",
  scores: null, training: null, train: null, tokenizers: [],
};

// isBPE reports whether the selected model reads byte-level BPE tokens
// (several characters, or part of one) rather than characters.
function isBPE() { return state.model && state.model.tokenizer === "bpe"; }

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function headers(json = true) {
  const h = json ? { "Content-Type": "application/json" } : {};
  if (state.apiKey) h.Authorization = "Bearer " + state.apiKey;
  return h;
}

// apiError turns an error response into an Error carrying OpenAI's error
// object (message, code, param) and the status.
async function apiError(resp) {
  let info = {};
  try {
    const body = await resp.json();
    if (body.error) info = body.error;
  } catch (_) { /* not JSON */ }
  if (resp.status === 401) $("key-box").hidden = false;
  const e = new Error(info.message || `${resp.status} ${resp.statusText}`);
  Object.assign(e, { status: resp.status, code: info.code || null, param: info.param || null });
  return e;
}

// visible shows a token so that its spaces and line breaks can be seen;
// a token that holds part of a character comes as the server writes it,
// "bytes:\xe2\x80", and shows as its bytes.
function visible(tok) {
  if (tok.startsWith("bytes:")) return tok.slice(6);
  return tok.replace(/ /g, "␣").replace(/\n/g, "↵").replace(/\t/g, "⇥");
}

// cellsByOffset groups tokens into the cells that show them: offsets[i]
// is the character token i begins in (text_offset), n the characters of
// the text. It returns [from, to, first, end] for each cell: its
// characters from..to and its tokens first..end, several when tokens
// share a character (one holds part of it, the next the rest).
function cellsByOffset(offsets, n) {
  const cells = [];
  for (let j = 0; j < offsets.length;) {
    let k = j + 1;
    while (k < offsets.length && offsets[k] === offsets[j]) k++;
    cells.push([offsets[j], k < offsets.length ? offsets[k] : n, j, k]);
    j = k;
  }
  return cells;
}

// quoteToken names a token in a sentence: its text quoted, or its bytes
// when it holds part of a character.
function quoteToken(tok) {
  return tok.startsWith("bytes:") ? `the bytes ${tok.slice(6)} (part of a character)` : JSON.stringify(tok);
}

// ---- errors, in a learner's words ----

// explain says what went wrong for someone learning, not for an API
// client; the API's own message stays one click away.
function explain(e) {
  const m = e.message || "";
  if (e.name === "TypeError" || e.status === undefined) return "The page could not reach the server. Is it still running?";
  switch (e.status) {
    case 401: return "This server asks for an API key: type it in the API key box at the top of the page.";
    case 413: return "That is more text than this server accepts in one request.";
    case 429: return e.code === "too_many_models"
      ? "The server holds as many trained models as it may. Restart it, or delete one through the API, to train another."
      : "The server is busy with other work right now. Wait a moment and try again.";
    case 503: return "The server is shutting down.";
  }
  if (e.code === "model_not_found") return "That model is not on the server (any more). Pick another one in the model list.";
  if (e.code === "unknown_character") {
    const c = /'(.+?)'|"(.+?)"/.exec(m);
    const ch = c ? (c[1] || c[2]) : "a character";
    return `The model has never seen the character ${JSON.stringify(ch)}: it only knows the characters of the text it learned from. Remove it, or train a model from scratch on your text.`;
  }
  if (e.code === "response_too_large") return "That would be more text than the server sends at once: ask for fewer characters (max tokens).";
  // The format's errors: the server's message without the field's name,
  // which the page chose, not the learner.
  const said = m.replace(/^(guided_\w+|response_format)(\[\d+\])?: ((regex|choice|grammar): )?/, "");
  if (e.code === "unsatisfiable_format") return `This model cannot write any text of that format: ${said}. Use characters it knows, or press “example”.`;
  if (e.code === "invalid_format") return `The format has a mistake: ${said}. Fix it, or press “example” for one that works.`;
  if (e.code === "unsupported_format") return `The format uses something the server's format engine does not follow: ${said}.`;
  if (e.code === "format_too_large") return "The format is too big for the server to follow: make it shorter or simpler.";
  if (e.code === "conflicting_formats") return "Give the text one format only.";
  if (e.code === "unsupported_tokenizer") return "This server has no GPT-2 tokenizer: start it with serve -gpt2 DIR, DIR holding GPT-2's encoder.json and vocab.bpe.";
  if (e.code === "training_diverged") return "Training blew up: the loss stopped being a number. Try again with fewer steps or a smaller learning rate.";
  if (e.code === "too_many_jobs") return "Another training run is going on. Wait for it to finish, or stop it.";
  switch (e.param) {
    case "max_tokens": {
      if (/too few for the format/.test(m)) return "The format's shortest text is longer than max tokens: allow more tokens. " + m;
      const r = /\[0, (\d+)\]/.exec(m);
      return r ? `Ask for at most ${r[1]} characters at a time (max tokens).` : "The number of characters to generate (max tokens) is out of range.";
    }
    case "prompt": return "The model cannot continue this prompt. Open “What the server said” for why.";
    case "text": return "The model cannot score this text. Open “What the server said” for why.";
    case "training_file":
      if (/needs at least/.test(m)) return "The text is too short to learn from: give it a few hundred characters at least.";
      return "The model cannot learn from this text. Open “What the server said” for why.";
  }
  if (e.param && e.param.startsWith("hyperparameters.steps")) {
    const r = /\[1, (\d+)\]/.exec(m);
    return r ? `Train for at most ${r[1]} steps on this server.` : "The number of steps is out of range.";
  }
  if (e.param) return `The server refused the setting ${e.param.replace(/^hyperparameters\./, "")}. Open “What the server said” for the rule.`;
  return "Something went wrong on the server.";
}

function showError(box, e) {
  box.querySelector(".say").textContent = explain(e);
  const api = box.querySelector(".api");
  if (api) api.textContent = (e.status ? `${e.status}` : "") + (e.code ? ` ${e.code}` : "") + (e.param ? ` (${e.param})` : "") + ": " + e.message;
  box.querySelector("details")?.removeAttribute("open");
  box.hidden = false;
}

function hideError(box) { box.hidden = true; }

// ---- models ----

async function loadModels() {
  const resp = await fetch("v1/models", { headers: headers() });
  if (!resp.ok) throw await apiError(resp);
  const list = await resp.json();
  state.models = list.data;
  const tz = await fetch("v1/tokenizers", { headers: headers() });
  state.tokenizers = tz.ok ? (await tz.json()).data : [];
  const sel = $("model");
  // Keep the model already chosen if the list is loaded again.
  const keep = state.models.some((m) => m.id === sel.value) ? sel.value : state.models[0].id;
  sel.replaceChildren();
  for (const m of state.models) sel.append(new Option(m.id, m.id));
  sel.value = keep;
  selectModel(keep);
  fillTrainBase();
  $("status").textContent = "Ready.";
  hideError($("gen-error"));
  if (state.training === null) checkTraining();
}

function selectModel(id) {
  state.model = state.models.find((m) => m.id === id);
  const m = state.model;
  $("model").value = id;
  $("model-info").textContent = `${m.parameters.toLocaleString("en")} parameters · ${m.tokenizer_description} · context ${m.context_length}`;
  $("knob-top_k").max = m.vocab_size;
  $("knob-top_k-range").max = m.vocab_size;
  $("score-stride").max = m.context_length;
  document.body.classList.toggle("bpe", isBPE());
  checkPrompt();
  formatChanged();
  tokenizeModelChanged();
}

// unknownChar returns the first character of text outside the model's
// vocabulary, with its position, or null (always for BPE, which encodes
// any text).
function unknownChar(text) {
  if (isBPE()) return null;
  const vocab = new Set(state.model.vocab);
  const chars = Array.from(text);
  const bad = chars.findIndex((c) => !vocab.has(c));
  return bad < 0 ? null : { ch: chars[bad], pos: bad };
}

// at names character pos of text as every message of minigpt does (the
// commands' cli.At): counted from 0, with the line and column, from 1,
// when the text has lines.
function at(text, pos) {
  const s = `at character ${pos} (counting from 0)`;
  const chars = Array.from(text);
  if (!chars.includes("\n")) return s;
  let line = 1, col = 1;
  for (const c of chars.slice(0, pos)) {
    if (c === "\n") { line++; col = 1; } else col++;
  }
  return `${s}, line ${line}, column ${col}`;
}

function unknownCharMessage(u, text) {
  return `The model has never seen ${JSON.stringify(u.ch)} (${at(text, u.pos)}): it knows only ${state.model.vocab.map(visible).join(" ")}`;
}

// checkPrompt flags a character the model does not know, before sending.
function checkPrompt() {
  if (!state.model) return true;
  const u = unknownChar($("prompt").value);
  $("prompt-error").textContent = u ? unknownCharMessage(u, $("prompt").value) : "";
  return !u;
}

// ---- knobs ----

function buildKnobs() {
  const box = $("knobs");
  for (const k of KNOBS) {
    const wrap = el("div", "knob");
    wrap.id = "knob-box-" + k.name;
    const label = el("label", null, k.name);
    label.htmlFor = "knob-" + k.name;
    const range = el("input");
    Object.assign(range, { type: "range", min: k.min, max: k.max, step: k.step, value: k.value, id: "knob-" + k.name + "-range" });
    range.setAttribute("aria-label", k.name);
    const num = el("input");
    Object.assign(num, { type: "number", min: k.min, max: k.max, step: k.step, value: k.value, id: "knob-" + k.name });
    const what = el("div", "what", k.what);
    const why = el("div", "why");
    why.id = "why-" + k.name;
    why.hidden = true;
    const sync = (v) => {
      range.value = v;
      num.value = v;
      wrap.classList.toggle("off", k.off !== null && Number(v) === k.off);
      updateModes();
    };
    range.addEventListener("input", () => sync(range.value));
    num.addEventListener("input", () => sync(num.value));
    k.set = sync;
    wrap.append(label, num, range, what, why);
    box.append(wrap);
  }
  KNOBS.forEach((k) => k.set(k.value));
}

// mode is what the knobs ask for: beam search, greedy, or sampling.
function mode() {
  if (Number($("knob-num_beams").value) > 1) return "beams";
  if (Number($("knob-temperature").value) === 0) return "greedy";
  return "sample";
}

// reasonFor says why a knob does nothing in the current mode, or null.
function reasonFor(name, m) {
  if (m === "beams" && ["temperature", "top_k", "top_p", "min_p"].includes(name)) return WHY_BEAMS;
  if (m === "greedy" && ["top_k", "top_p", "min_p"].includes(name)) return WHY_GREEDY_FILTER;
  if (m === "greedy" && ["repetition_penalty", "presence_penalty", "frequency_penalty", "no_repeat_ngram_size"].includes(name)) return WHY_GREEDY_LOGITS;
  return null;
}

function disableWithReason(inputs, whyEl, reason) {
  for (const i of inputs) i.disabled = reason !== null;
  whyEl.hidden = reason === null;
  whyEl.textContent = reason || "";
}

// updateModes disables every knob the current mode ignores, with the
// reason beside it.
function updateModes() {
  if (!$("knob-num_beams")) return; // still building
  const m = mode();
  for (const k of KNOBS) {
    const reason = reasonFor(k.name, m);
    disableWithReason([$("knob-" + k.name), $("knob-" + k.name + "-range")], $("why-" + k.name), reason);
    $("knob-box-" + k.name).classList.toggle("disabled", reason !== null);
  }
  disableWithReason([$("bias")], $("bias-why"), m === "greedy" ? WHY_GREEDY_LOGITS : null);
  disableWithReason([$("seed"), $("seed-random")], $("seed-why"), m === "sample" ? null : WHY_NO_DRAW);
  const set = Object.entries(knobValues()).map(([k, v]) => `${k} ${v}`);
  $("knob-summary").textContent = set.length ? "· " + set.join(", ") : "· all off";
}

function knobValues() {
  const out = {};
  for (const k of KNOBS) {
    const input = $("knob-" + k.name);
    const v = Number(input.value);
    if (input.disabled) continue; // no effect in this mode: the server would refuse it
    if (k.off === null || v !== k.off) out[k.name] = v;
  }
  return out;
}

// parseBias reads "e=-100, t=+3" into logit_bias by token id: a token
// named by its text ("space" for " "), or by its id (#42=-100).
function parseBias(text) {
  const bias = {};
  for (const part of text.split(",")) {
    const p = part.trim();
    if (!p) continue;
    const at = p.lastIndexOf("=");
    if (at < 1) throw Object.assign(new Error(`logit bias ${JSON.stringify(p)}: write character=bias, like e=-100`), { param: "logit_bias", local: true });
    let ch = p.slice(0, at);
    if (ch === "space") ch = " ";
    const id = /^#\d+$/.test(ch) ? Number(ch.slice(1)) : state.model.vocab.indexOf(ch);
    if (id < 0 || id >= state.model.vocab_size) throw Object.assign(new Error(`logit bias: the model has no ${isBPE() ? "token" : "character"} ${JSON.stringify(ch)}`), { param: "logit_bias", local: true });
    bias[id] = Number(p.slice(at + 1));
  }
  return bias;
}

function requestBody(extra) {
  const body = {
    model: state.model.id,
    prompt: $("prompt").value,
    max_tokens: Number($("max_tokens").value),
    ...knobValues(),
  };
  if (!$("seed-random").checked && !$("seed").disabled) body.seed = Number($("seed").value);
  const stop = $("stop").value.split("|").filter((s) => s !== "");
  if (stop.length) body.stop = stop.slice(0, 4);
  if (!$("bias").disabled) {
    const bias = parseBias($("bias").value);
    if (Object.keys(bias).length) body.logit_bias = bias;
  }
  return Object.assign(body, formatFields(), extra);
}

// ---- wiring ----

const TABS = ["generate", "compare", "score", "tokenize", "train"];

function showTab(name) {
  for (const t of TABS) {
    const on = t === name;
    $("tab-" + t).classList.toggle("active", on);
    $("tab-" + t).setAttribute("aria-selected", on);
    $("pane-" + t).hidden = !on;
  }
  $("main").dataset.tab = name;
  // On Compare the main button (and Ctrl+Enter) runs the comparison.
  $("generate-label").textContent = name === "compare" ? "Run comparison" : "Generate";
  $("generate").title = (name === "compare" ? "Run the comparison" : "Generate") + " (Ctrl+Enter in the prompt)";
  if (name === "train") { drawCurve(); listTuned(); }
  if (name === "tokenize") tokenize();
}

// run is what the main button and Ctrl+Enter do on the tab in view.
function run() {
  if ($("main").dataset.tab === "compare") compare();
  else generate();
}

function init() {
  buildKnobs();
  $("generate").addEventListener("click", run);
  $("stop-button").addEventListener("click", () => state.abort && state.abort.abort());
  $("reset").addEventListener("click", () => KNOBS.forEach((k) => k.set(k.value)));
  $("prompt").addEventListener("input", checkPrompt);
  $("model").addEventListener("change", (e) => selectModel(e.target.value));
  for (const t of TABS) $("tab-" + t).addEventListener("click", () => showTab(t));
  $("compare-run").addEventListener("click", compare);
  $("score-run").addEventListener("click", score);
  initFormat();
  initTokenize();
  $("train-run").addEventListener("click", train);
  $("train-stop").addEventListener("click", stopTraining);
  $("train-use").addEventListener("click", generateWithIt);
  $("train-base").addEventListener("change", updateTrainBase);
  for (const id of ["train-lanternbay", "train-mine"]) {
    $(id).addEventListener("change", () => { $("train-text").hidden = !$("train-mine").checked; });
  }
  $("train-steps").addEventListener("input", () => { if (!state.train) drawCurve(); });
  $("api-key").addEventListener("change", (e) => {
    state.apiKey = e.target.value;
    state.training = null;
    loadModels().catch(showLoadError);
  });
  $("prompt").addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); run(); } });
  $("score-text").addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); score(); } });
  const tokenKeys = (box, attr, fn) => {
    box.addEventListener("click", (e) => { if (e.target.dataset[attr] !== undefined) fn(Number(e.target.dataset[attr])); });
    box.addEventListener("keydown", (e) => {
      if ((e.key === "Enter" || e.key === " ") && e.target.dataset[attr] !== undefined) { e.preventDefault(); fn(Number(e.target.dataset[attr])); }
    });
  };
  tokenKeys($("output"), "step", inspect);
  tokenKeys($("score-output"), "score", inspectScore);
  $("score-output").addEventListener("mouseover", (e) => { if (e.target.dataset.score !== undefined) inspectScore(Number(e.target.dataset.score)); });
  if (/Mac|iPhone|iPad/.test(navigator.platform)) $("generate").querySelector("kbd").textContent = "⌘+Enter";
  // On a phone the knobs fold away, so that the text and any error sit
  // right under the Generate button.
  if (window.matchMedia("(max-width: 900px)").matches) $("knob-panel").open = false;
  drawCurve();
  // The loss chart is drawn at its box's width, so that its labels keep
  // their size on a phone: again whenever that width changes.
  let lastWidth = 0;
  new ResizeObserver(() => {
    const w = $("train-curve-box").clientWidth;
    if (w && w !== lastWidth) { lastWidth = w; drawCurve(); }
  }).observe($("train-curve-box"));
  loadModels().catch(showLoadError);
}

function showLoadError(e) {
  $("status").textContent = "";
  showError($("gen-error"), Object.assign(e, { message: "Could not load the models: " + e.message }));
}

document.addEventListener("DOMContentLoaded", init);
