// minigpt playground: plain JavaScript, no build step, no external
// resource. Generated text is always inserted with textContent, never as
// HTML. Every URL is relative, so the page works wherever the server is
// mounted.
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
  models: [], model: null, abort: null, steps: [], chars: [], promptLen: 0, selected: null, apiKey: "",
  scores: null, training: null, train: null,
};

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

function visible(ch) {
  return ch === " " ? "␣" : ch === "\n" ? "↵" : ch;
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
  if (e.code === "training_diverged") return "Training blew up: the loss stopped being a number. Try again with fewer steps or a smaller learning rate.";
  if (e.code === "too_many_jobs") return "Another training run is going on. Wait for it to finish, or stop it.";
  switch (e.param) {
    case "max_tokens": {
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
  $("model-info").textContent = `${m.parameters.toLocaleString("en")} parameters · ${m.vocab.length} characters · context ${m.context_length}`;
  $("knob-top_k").max = m.vocab.length;
  $("knob-top_k-range").max = m.vocab.length;
  $("score-stride").max = m.context_length;
  checkPrompt();
}

// unknownChar returns the first character of text outside the model's
// vocabulary, with its position, or null.
function unknownChar(text) {
  const vocab = new Set(state.model.vocab);
  const chars = Array.from(text);
  const bad = chars.findIndex((c) => !vocab.has(c));
  return bad < 0 ? null : { ch: chars[bad], pos: bad };
}

function unknownCharMessage(u) {
  return `The model has never seen ${JSON.stringify(u.ch)} (at character ${u.pos + 1}): it knows only ${state.model.vocab.map(visible).join(" ")}`;
}

// checkPrompt flags a character the model does not know, before sending.
function checkPrompt() {
  if (!state.model) return true;
  const u = unknownChar($("prompt").value);
  $("prompt-error").textContent = u ? unknownCharMessage(u) : "";
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

// parseBias reads "e=-100, t=+3" into logit_bias by token id.
function parseBias(text) {
  const bias = {};
  for (const part of text.split(",")) {
    const p = part.trim();
    if (!p) continue;
    const at = p.lastIndexOf("=");
    if (at < 1) throw Object.assign(new Error(`logit bias ${JSON.stringify(p)}: write character=bias, like e=-100`), { param: "logit_bias", local: true });
    let ch = p.slice(0, at);
    if (ch === "space") ch = " ";
    const id = state.model.vocab.indexOf(ch);
    if (id < 0) throw Object.assign(new Error(`logit bias: the model has no character ${JSON.stringify(ch)}`), { param: "logit_bias", local: true });
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
  return Object.assign(body, extra);
}

// ---- generation (streamed) ----

// readEvents yields the data payloads of a text/event-stream response.
async function* readEvents(resp) {
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const event = buf.slice(0, i);
      buf = buf.slice(i + 2);
      for (const line of event.split("\n")) {
        if (line.startsWith("data: ")) yield line.slice(6);
      }
    }
  }
}

// surpriseClass bins a surprisal in bits for the colour scale: the same
// bins as the legend.
function surpriseClass(bits) {
  const edges = [0.25, 1, 2, 4, 8];
  let i = 0;
  while (i < edges.length && bits >= edges[i]) i++;
  return "s" + i;
}

function bitsOf(logprob) { return -logprob / Math.LN2; }

function fmtBits(b) { return b < 0.01 ? b.toExponential(1) : b.toFixed(2); }

function addToken(out, ch, step) {
  const i = state.steps.length;
  state.steps.push(step);
  state.chars.push(ch);
  const span = el("span", "tok", ch === "\n" ? "↵\n" : ch);
  span.dataset.step = i;
  span.tabIndex = 0;
  span.setAttribute("role", "button");
  if (step) {
    const bits = bitsOf(step.raw_logprob);
    span.classList.add(surpriseClass(bits));
    span.dataset.bits = bits;
    span.title = `${JSON.stringify(ch)}: ${fmtBits(bits)} bits of surprise (raw p = ${fmt(Math.exp(step.raw_logprob))}, drawn with p = ${fmt(Math.exp(step.logprob))}), step ${i + 1}`;
  }
  out.append(span);
}

async function generate() {
  if (!checkPrompt()) return;
  const errBox = $("gen-error");
  hideError(errBox);
  let body;
  try {
    body = requestBody({ stream: true, stream_options: { include_usage: true } });
    // Beam search scores whole sequences: it has no per-step trace.
    if (!(body.num_beams > 1)) {
      body.trace = Math.min(16, state.model.vocab.length);
      const m = state.model;
      if (body.max_tokens * m.layers * m.heads * m.context_length <= MAX_ATTENTION_FLOATS) body.trace_attention = true;
    }
  } catch (e) {
    showError(errBox, e);
    return;
  }
  const out = $("output");
  out.replaceChildren(el("span", "prompt", body.prompt));
  state.steps = [];
  state.chars = Array.from(body.prompt);
  state.promptLen = state.chars.length;
  $("inspector").hidden = true;
  state.abort = new AbortController();
  $("generate").disabled = true;
  $("stop-button").disabled = false;
  $("status").textContent = "Generating…";
  const started = performance.now();
  let seed = null, finish = null, count = 0;
  try {
    const resp = await fetch("v1/completions", {
      method: "POST", headers: headers(), body: JSON.stringify(body), signal: state.abort.signal,
    });
    if (!resp.ok) throw await apiError(resp);
    seed = resp.headers.get("Minigpt-Seed");
    for await (const data of readEvents(resp)) {
      if (data === "[DONE]") break;
      const chunk = JSON.parse(data);
      if (chunk.error) throw Object.assign(new Error(chunk.error.message), { status: 400, code: chunk.error.code, param: chunk.error.param });
      for (const c of chunk.choices) {
        const chars = Array.from(c.text);
        chars.forEach((ch, j) => addToken(out, ch, c.trace ? c.trace[j] : null));
        count += chars.length;
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    const secs = (performance.now() - started) / 1000;
    const drawn = mode() === "sample";
    $("status").textContent = `${count} characters in ${secs.toFixed(2)} s · finish: ${finish}` + (drawn ? ` · seed ${seed}` : "") +
      (drawn && body.seed === undefined ? " (chosen by the server: send it back to reproduce)" : "");
    if ($("seed-random").checked && seed && drawn) $("seed").value = seed;
  } catch (e) {
    if (e.name === "AbortError") {
      $("status").textContent = `Stopped after ${count} characters (the server stopped generating too).`;
    } else {
      $("status").textContent = "";
      showError(errBox, e);
    }
  } finally {
    state.abort = null;
    $("generate").disabled = false;
    $("stop-button").disabled = true;
  }
}

// ---- the inspector ----

function fmt(p) {
  if (p === 0) return "0";
  if (p < 0.001) return p.toExponential(0);
  return p.toFixed(3);
}

function inspect(i) {
  const step = state.steps[i];
  if (!step) return;
  document.querySelectorAll("#output .tok.selected").forEach((s) => s.classList.remove("selected"));
  const span = document.querySelector(`#output .tok[data-step="${i}"]`);
  if (span) span.classList.add("selected");
  state.selected = i;
  const last = step.stages.length - 1;
  $("inspect-title").textContent = `Step ${i + 1}: drew ${JSON.stringify(step.token)} with probability ${fmt(Math.exp(step.logprob))}`;
  $("inspect-sub").textContent = `Raw probability ${fmt(Math.exp(step.raw_logprob))}: ${fmtBits(bitsOf(step.raw_logprob))} bits of surprise. Stages that ran: ${step.stages.join(" → ")}. ` +
    `${step.candidates.length} most likely candidates under the raw distribution:`;
  const bars = $("bars");
  bars.replaceChildren();
  const top = Math.max(...step.candidates.map((c) => Math.max(c.probs[0], c.probs[last])));
  for (const c of step.candidates) {
    const row = el("div", "bar-row" + (c.chosen ? " chosen" : ""));
    const name = el("span", "tokname", visible(c.token));
    name.append(el("small", null, "#" + c.id));
    row.append(name, track("raw", c.probs[0], top), track("final", c.probs[last], top));
    if (c.chosen) row.append(el("span", "tag chosen", "★ chosen"));
    else if (c.cut_by) row.append(el("span", "tag cut", "cut by " + c.cut_by));
    else row.append(el("span", "tag kept", "kept"));
    bars.append(row);
  }
  const table = $("stages");
  table.replaceChildren();
  const head = el("tr");
  head.append(el("th", null, ""));
  for (const s of step.stages) head.append(el("th", null, s));
  table.append(head);
  for (const c of step.candidates) {
    const tr = el("tr", c.chosen ? "chosen" : null);
    tr.append(el("td", null, visible(c.token)));
    for (const p of c.probs) tr.append(el("td", p === 0 ? "zero" : null, fmt(p)));
    table.append(tr);
  }
  showAttention(i, step);
  $("inspector").hidden = false;
}

// showAttention draws, for the inspected character, one heat strip per
// layer and head over the characters the model saw, with the strongest
// positions spelled out.
function showAttention(i, step) {
  const grid = $("attn-grid");
  grid.replaceChildren();
  const att = step.attention;
  if (!att) {
    $("attention-sub").textContent = "Not recorded for this generation: the page asks for it when max tokens × layers × heads × context stays under " +
      MAX_ATTENTION_FLOATS.toLocaleString("en") + " weights. Ask for fewer characters to see it.";
    return;
  }
  const pos = state.promptLen + i;
  const n = att[0][0].length;
  const ctx = state.chars.slice(pos - n, pos);
  $("attention-sub").textContent = `To choose ${JSON.stringify(step.token)}, each head weighed the ${n} characters before it (darker: more weight; each strip sums to 1).`;
  att.forEach((layer, l) => {
    const row = el("div", "attn-layer");
    row.append(el("div", "attn-label", `layer ${l + 1}`));
    const heads = el("div", "attn-heads");
    layer.forEach((w, h) => {
      const head = el("div", "attn-head");
      head.dataset.layer = l;
      head.dataset.head = h;
      const strip = el("div", "strip");
      const peak = Math.max(...w);
      w.forEach((x, s) => {
        const cell = el("span", "cell", visible(ctx[s] ?? "?"));
        cell.style.backgroundColor = `rgba(47, 111, 237, ${peak > 0 ? (x / peak).toFixed(3) : 0})`;
        if (x / peak > 0.55) cell.classList.add("strong");
        cell.title = `${JSON.stringify(ctx[s])} (${n - s} back): ${(100 * x).toFixed(1)}%`;
        strip.append(cell);
      });
      const order = w.map((x, s) => [x, s]).sort((a, b) => b[0] - a[0]).slice(0, 3);
      const best = el("div", "top", `head ${h + 1}: ` + order.map(([x, s]) => `'${visible(ctx[s] ?? "?")}' ${Math.round(100 * x)}%`).join(" · "));
      head.append(strip, best);
      heads.append(head);
    });
    row.append(heads);
    grid.append(row);
  });
}

function track(kind, p, top) {
  const t = el("div", "track");
  const fill = el("div", "fill " + kind);
  fill.style.width = (top > 0 ? (100 * p) / top : 0) + "%";
  t.append(fill, el("span", "val", fmt(p)));
  return t;
}

// ---- compare ----

// loopOnset is minigpt.LoopOnset: the first character index i at which the
// w-character window text[i:i+w] appears again at or after i+w, or -1.
function loopOnset(text, w) {
  const cs = Array.from(text);
  for (let i = 0; i + 2 * w <= cs.length; i++) {
    const win = cs.slice(i, i + w).join("");
    if (cs.slice(i + w).join("").includes(win)) return i;
  }
  return -1;
}

async function compare() {
  if (!checkPrompt()) return;
  const prompt = $("prompt").value;
  const n = Number($("compare-tokens").value);
  const w = Number($("compare-window").value);
  const seed = $("seed-random").checked ? undefined : Number($("seed").value);
  const box = $("compare");
  box.replaceChildren();
  $("compare-run").disabled = true;
  const cards = STRATEGIES.map((s) => {
    const card = el("div", "card");
    card.dataset.strategy = s.label;
    const meta = el("div", "meta", "generating…");
    const text = el("div", "text");
    card.append(el("h3", null, s.label), meta, text);
    box.append(card);
    return { card, meta, text };
  });
  await Promise.all(STRATEGIES.map(async (s, i) => {
    const { card, meta, text } = cards[i];
    try {
      const body = { model: state.model.id, prompt, max_tokens: n, ...s.params };
      if (seed !== undefined) body.seed = seed;
      const resp = await fetch("v1/completions", { method: "POST", headers: headers(), body: JSON.stringify(body) });
      if (!resp.ok) throw await apiError(resp);
      const res = await resp.json();
      const full = prompt + res.choices[0].text;
      const onset = loopOnset(full, w);
      renderCompare(text, Array.from(full), Array.from(prompt).length, onset, w);
      meta.replaceChildren();
      if (onset >= 0) {
        meta.append(el("span", "loop", `loops from character ${onset}`));
        card.dataset.loop = onset;
      } else {
        meta.textContent = `no ${w}-character window repeats`;
      }
      meta.append(document.createTextNode(` · seed ${res.seed}`));
    } catch (e) {
      meta.textContent = explain(e);
      meta.title = e.message;
    }
  }));
  $("compare-run").disabled = false;
}

// renderCompare writes the text with the prompt dimmed, the window where
// the loop starts marked, and its first repeat outlined.
function renderCompare(box, chars, promptLen, onset, w) {
  box.replaceChildren();
  const marks = []; // [from, to, class]
  if (onset >= 0) {
    const win = chars.slice(onset, onset + w).join("");
    let again = -1;
    for (let j = onset + w; j + w <= chars.length && again < 0; j++) {
      if (chars.slice(j, j + w).join("") === win) again = j;
    }
    marks.push([onset, onset + w, "onset"]);
    if (again >= 0) marks.push([again, again + w, "again"]);
  }
  const cuts = new Set([0, promptLen, chars.length]);
  for (const [f, t] of marks) { cuts.add(f); cuts.add(t); }
  const sorted = [...cuts].filter((c) => c <= chars.length).sort((a, b) => a - b);
  for (let k = 0; k + 1 < sorted.length; k++) {
    const from = sorted[k], to = sorted[k + 1];
    const m = marks.find(([f, t]) => from >= f && from < t);
    const s = m ? el("mark", m[2]) : el("span", from < promptLen ? "prompt" : null);
    s.textContent = chars.slice(from, to).join("");
    if (m) s.title = m[2] === "onset" ? `the loop starts here (character ${onset})` : "the same window again";
    box.append(s);
  }
}

// ---- score ----

async function score() {
  const errBox = $("score-error");
  hideError(errBox);
  const text = $("score-text").value;
  const u = unknownChar(text);
  $("score-text-error").textContent = u ? unknownCharMessage(u) : "";
  if (u) return;
  $("score-run").disabled = true;
  try {
    const resp = await fetch("v1/score", {
      method: "POST", headers: headers(),
      body: JSON.stringify({ model: state.model.id, text, stride: Number($("score-stride").value), top_n: Math.min(5, state.model.vocab.length) }),
    });
    if (!resp.ok) throw await apiError(resp);
    const res = await resp.json();
    state.scores = res;
    renderScore(Array.from(text), res);
  } catch (e) {
    showError(errBox, e);
  } finally {
    $("score-run").disabled = false;
  }
}

function renderScore(chars, res) {
  const out = $("score-output");
  out.replaceChildren(el("span", "prompt", chars[0]));
  res.tokens.forEach((t, i) => {
    const span = el("span", "tok " + surpriseClass(t.bits), t.token === "\n" ? "↵\n" : t.token);
    span.dataset.score = i;
    span.dataset.bits = t.bits;
    span.tabIndex = 0;
    span.setAttribute("role", "button");
    span.title = `${JSON.stringify(t.token)}: ${fmtBits(t.bits)} bits (p = ${fmt(Math.exp(t.logprob))}) after ${t.context} characters`;
    out.append(span);
  });
  const s = res.summary;
  const totals = $("score-totals");
  totals.replaceChildren();
  for (const [before, value, after, id] of [
    ["", s.tokens.toLocaleString("en"), "characters scored", "score-n"],
    ["loss", s.loss.toFixed(4), "nats per character", "score-loss"],
    ["perplexity", s.perplexity.toFixed(3), "", "score-ppl"],
    ["", s.bits_per_char.toFixed(3), "bits per character", "score-bpc"],
  ]) {
    const b = el("span", "total", before ? before + " " : "");
    b.id = id;
    b.append(el("b", null, value), document.createTextNode(after ? " " + after : ""));
    totals.append(b);
  }
  totals.hidden = false;
  $("score-inspector").hidden = true;
}

function inspectScore(i) {
  const t = state.scores && state.scores.tokens[i];
  if (!t) return;
  document.querySelectorAll("#score-output .tok.selected").forEach((s) => s.classList.remove("selected"));
  document.querySelector(`#score-output .tok[data-score="${i}"]`)?.classList.add("selected");
  $("score-title").textContent = `Character ${t.pos + 1}, ${JSON.stringify(t.token)}: ${fmtBits(t.bits)} bits of surprise`;
  $("score-sub").textContent = `The model gave it probability ${fmt(Math.exp(t.logprob))} after ${t.context} characters of context. Its top predictions there:`;
  const bars = $("score-bars");
  bars.replaceChildren();
  const top = Math.exp(t.top[0]?.logprob ?? 0);
  for (const c of t.top) {
    const row = el("div", "bar-row" + (c.token === t.token ? " chosen" : ""));
    row.append(el("span", "tokname", visible(c.token)), track("final", Math.exp(c.logprob), top), el("span", "muted", `${fmtBits(bitsOf(c.logprob))} bits`));
    if (c.token === t.token) row.append(el("span", "tag chosen", "★ the text's"));
    else row.append(el("span"));
    bars.append(row);
  }
  $("score-inspector").hidden = false;
}

// ---- train ----

// checkTraining asks whether this server trains (cmd/serve -training).
async function checkTraining() {
  try {
    const resp = await fetch("v1/fine_tuning/jobs?limit=1", { headers: headers() });
    if (resp.status === 401) return; // asked again once the key is in
    if (!resp.ok) throw await apiError(resp);
    state.training = true;
  } catch (e) {
    state.training = false;
  }
  $("train-off").hidden = state.training;
  for (const id of ["train-run", "train-steps", "train-sample-every", "train-seed", "train-base", "train-lanternbay", "train-mine", "train-text"]) {
    $(id).disabled = !state.training;
  }
}

function fillTrainBase() {
  const sel = $("train-base");
  const keep = sel.value || "scratch";
  sel.replaceChildren(new Option("from scratch (a small preset: 2 layers, 4 heads, width 64, context 32)", "scratch"));
  for (const m of state.models) sel.append(new Option(`fine-tune ${m.id} (${m.parameters.toLocaleString("en")} parameters)`, m.id));
  sel.value = [...sel.options].some((o) => o.value === keep) ? keep : "scratch";
  updateTrainBase();
}

function updateTrainBase() {
  const base = $("train-base").value;
  $("train-base-why").textContent = base === "scratch"
    ? "A new model with random weights: it starts by writing noise, and learns the text's characters."
    : "Fine-tuning keeps the model's characters: every character of the text must be one it knows.";
}

// trainingText returns the text to upload, or null for Lantern Bay.
function trainingText() {
  return $("train-mine").checked ? $("train-text").value : null;
}

async function train() {
  const errBox = $("train-error");
  hideError(errBox);
  $("train-use").hidden = true;
  const steps = Number($("train-steps").value);
  const sampleEvery = Number($("train-sample-every").value);
  const base = $("train-base").value;
  $("train-run").disabled = true;
  $("train-status").textContent = "Starting…";
  state.train = { train: [], val: [], steps, job: null, abort: new AbortController() };
  drawCurve();
  $("train-sample").replaceChildren();
  $("train-sample-step").textContent = "";
  try {
    let file = "file-lanternbay";
    const text = trainingText();
    if (text !== null) {
      const resp = await fetch("v1/files", {
        method: "POST", headers: headers(),
        body: JSON.stringify({ purpose: "fine-tune", filename: "playground.txt", content: text }),
      });
      if (!resp.ok) throw await apiError(resp);
      file = (await resp.json()).id;
    }
    const resp = await fetch("v1/fine_tuning/jobs", {
      method: "POST", headers: headers(),
      body: JSON.stringify({
        model: base, training_file: file, seed: Number($("train-seed").value), suffix: "playground",
        hyperparameters: { steps, eval_every: Math.max(1, Math.round(steps / 20)), sample_every: sampleEvery },
      }),
    });
    if (!resp.ok) throw await apiError(resp);
    const job = await resp.json();
    state.train.job = job.id;
    $("train-stop").disabled = false;
    await followJob(job.id);
  } catch (e) {
    if (e.name !== "AbortError") {
      $("train-status").textContent = "";
      showError(errBox, e);
    }
  } finally {
    $("train-run").disabled = !state.training;
    $("train-stop").disabled = true;
  }
}

// followJob streams a job's events into the curve and the sample, and
// reports how the job ended.
async function followJob(id) {
  const t = state.train;
  const resp = await fetch(`v1/fine_tuning/jobs/${id}/events?stream=true`, { headers: headers(), signal: t.abort.signal });
  if (!resp.ok) throw await apiError(resp);
  let pending = false;
  const redraw = () => {
    if (!pending) {
      pending = true;
      requestAnimationFrame(() => { pending = false; drawCurve(); });
    }
  };
  for await (const data of readEvents(resp)) {
    if (data === "[DONE]") break;
    const ev = JSON.parse(data);
    if (ev.type === "metrics") {
      t.train.push([ev.data.step, ev.data.train_loss]);
      if (ev.data.valid_loss !== undefined) t.val.push([ev.data.step, ev.data.valid_loss]);
      $("train-status").textContent = `Step ${ev.data.step} of ${ev.data.total_steps} · training loss ${ev.data.train_loss.toFixed(3)}` +
        (t.val.length ? ` · validation loss ${t.val[t.val.length - 1][1].toFixed(3)}` : "");
      redraw();
    } else if (ev.data && ev.data.sample !== undefined) {
      $("train-sample").textContent = ev.data.sample;
      $("train-sample-step").textContent = `(at step ${ev.data.step})`;
    } else if (!t.train.length) {
      $("train-status").textContent = ev.message; // created, waiting, started
    }
  }
  drawCurve();
  const r = await fetch(`v1/fine_tuning/jobs/${id}`, { headers: headers() });
  if (!r.ok) throw await apiError(r);
  const job = await r.json();
  t.result = job;
  if (job.status === "succeeded") {
    $("train-status").textContent = `Done: ${job.step} steps. The new model is ${job.fine_tuned_model}.`;
    await loadModels();
    $("train-use").hidden = false;
    $("train-use").dataset.model = job.fine_tuned_model;
  } else if (job.status === "cancelled") {
    $("train-status").textContent = `Stopped after step ${job.step}: nothing was kept.`;
  } else {
    $("train-status").textContent = "";
    showError($("train-error"), Object.assign(new Error(job.error ? job.error.message : job.status), { status: 200, code: job.error && job.error.code }));
  }
}

async function stopTraining() {
  const t = state.train;
  if (!t || !t.job) return;
  $("train-stop").disabled = true;
  $("train-status").textContent = "Stopping at the end of this step…";
  const resp = await fetch(`v1/fine_tuning/jobs/${t.job}/cancel`, { method: "POST", headers: headers(), body: "{}" });
  if (!resp.ok) showError($("train-error"), await apiError(resp));
}

// drawCurve draws the training loss of every step and the validation loss
// of every evaluation, with axes, as SVG.
function drawCurve() {
  const svg = $("train-curve");
  const NS = svg.namespaceURI; // SVG's, from the page's own <svg>
  const W = 640, H = 260, L = 52, R = 16, T = 14, B = 38;
  const t = state.train || { train: [], val: [], steps: Number($("train-steps").value) };
  svg.replaceChildren();
  const mk = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.append(e);
    return e;
  };
  const all = [...t.train, ...t.val].map((p) => p[1]);
  const yMax = all.length ? Math.max(...all) * 1.05 : 3.5;
  const xMax = Math.max(1, t.steps);
  const x = (s) => L + ((W - L - R) * s) / xMax;
  const y = (v) => T + (H - T - B) * (1 - v / yMax);
  for (let k = 0; k <= 4; k++) {
    const v = (yMax * k) / 4, s = Math.round((xMax * k) / 4);
    mk("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" });
    mk("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end", class: "tick" }, v.toFixed(v < 10 ? 1 : 0));
    mk("text", { x: x(s), y: H - B + 16, "text-anchor": "middle", class: "tick" }, String(s));
  }
  mk("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle", class: "axis" }, "step");
  mk("text", { x: 12, y: (T + H - B) / 2, transform: `rotate(-90 12 ${(T + H - B) / 2})`, "text-anchor": "middle", class: "axis" }, "loss (nats per character)");
  const pts = (ps) => ps.map(([s, v]) => `${x(s).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
  mk("polyline", { points: pts(t.train), class: "train", "data-n": t.train.length });
  mk("polyline", { points: pts(t.val), class: "val", "data-n": t.val.length });
  for (const [s, v] of t.val) mk("circle", { cx: x(s), cy: y(v), r: 3, class: "val" });
  mk("line", { x1: W - 190, x2: W - 170, y1: T + 6, y2: T + 6, class: "train" });
  mk("text", { x: W - 165, y: T + 10, class: "key" }, "training");
  mk("circle", { cx: W - 90, cy: T + 6, r: 3, class: "val" });
  mk("text", { x: W - 82, y: T + 10, class: "key" }, "validation");
}

function generateWithIt() {
  const name = $("train-use").dataset.model;
  if (!state.models.some((m) => m.id === name)) return;
  selectModel(name);
  showTab("generate");
  $("prompt").focus();
}

// ---- wiring ----

const TABS = ["generate", "compare", "score", "train"];

function showTab(name) {
  for (const t of TABS) {
    const on = t === name;
    $("tab-" + t).classList.toggle("active", on);
    $("tab-" + t).setAttribute("aria-selected", on);
    $("pane-" + t).hidden = !on;
  }
  $("main").dataset.tab = name;
}

function init() {
  buildKnobs();
  $("generate").addEventListener("click", generate);
  $("stop-button").addEventListener("click", () => state.abort && state.abort.abort());
  $("reset").addEventListener("click", () => KNOBS.forEach((k) => k.set(k.value)));
  $("prompt").addEventListener("input", checkPrompt);
  $("model").addEventListener("change", (e) => selectModel(e.target.value));
  for (const t of TABS) $("tab-" + t).addEventListener("click", () => showTab(t));
  $("compare-run").addEventListener("click", compare);
  $("score-run").addEventListener("click", score);
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
  $("prompt").addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); generate(); } });
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
  loadModels().catch(showLoadError);
}

function showLoadError(e) {
  $("status").textContent = "";
  showError($("gen-error"), Object.assign(e, { message: "Could not load the models: " + e.message }));
}

init();
