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
    what: "beam search instead of sampling: deterministic, keeps the penalties and the bias but no temperature, top-k, top-p or min-p; no per-character view; 0 = off" },
];

// The lessons' strategy comparison.
const STRATEGIES = [
  { label: "greedy", params: { temperature: 0 } },
  { label: "temperature=0.8", params: { temperature: 0.8 } },
  { label: "top_k=5", params: { temperature: 1, top_k: 5 } },
  { label: "top_p=0.9", params: { temperature: 1, top_p: 0.9 } },
  { label: "temperature=1.5", params: { temperature: 1.5 } },
];

const $ = (id) => document.getElementById(id);
const state = { models: [], model: null, abort: null, steps: [], selected: null, apiKey: "" };

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function headers() {
  const h = { "Content-Type": "application/json" };
  if (state.apiKey) h.Authorization = "Bearer " + state.apiKey;
  return h;
}

// apiError turns an error response into an Error with OpenAI's message.
async function apiError(resp) {
  let msg = resp.status + " " + resp.statusText;
  try {
    const body = await resp.json();
    if (body.error && body.error.message) msg = body.error.message;
  } catch (_) { /* not JSON */ }
  if (resp.status === 401) $("key-box").hidden = false;
  const e = new Error(msg);
  e.status = resp.status;
  return e;
}

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
  $("status").textContent = "Ready.";
}

function selectModel(id) {
  state.model = state.models.find((m) => m.id === id);
  const m = state.model;
  $("model-info").textContent = `${m.parameters.toLocaleString("en")} parameters · ${m.vocab.length} characters · context ${m.context_length}`;
  const topK = $("knob-top_k");
  topK.max = m.vocab.length;
  $("knob-top_k-range").max = m.vocab.length;
  checkPrompt();
}

// checkPrompt flags a character the model does not know, before sending.
function checkPrompt() {
  if (!state.model) return true;
  const vocab = new Set(state.model.vocab);
  const chars = Array.from($("prompt").value);
  const bad = chars.findIndex((c) => !vocab.has(c));
  $("prompt-error").textContent = bad < 0 ? "" :
    `character ${JSON.stringify(chars[bad])} at position ${bad} is not in ${state.model.id}'s vocabulary`;
  return bad < 0;
}

// ---- knobs ----

function buildKnobs() {
  const box = $("knobs");
  for (const k of KNOBS) {
    const wrap = el("div", "knob");
    const label = el("label", null, k.name);
    label.htmlFor = "knob-" + k.name;
    const range = el("input");
    Object.assign(range, { type: "range", min: k.min, max: k.max, step: k.step, value: k.value, id: "knob-" + k.name + "-range" });
    range.setAttribute("aria-label", k.name);
    const num = el("input");
    Object.assign(num, { type: "number", min: k.min, max: k.max, step: k.step, value: k.value, id: "knob-" + k.name });
    const what = el("div", "what", k.what);
    const sync = (v) => {
      range.value = v;
      num.value = v;
      wrap.classList.toggle("off", k.off !== null && Number(v) === k.off);
    };
    range.addEventListener("input", () => sync(range.value));
    num.addEventListener("input", () => sync(num.value));
    k.set = sync;
    sync(k.value);
    wrap.append(label, num, range, what);
    box.append(wrap);
  }
}

function knobValues() {
  const out = {};
  for (const k of KNOBS) {
    const v = Number($("knob-" + k.name).value);
    if (k.off === null || v !== k.off) out[k.name] = v;
  }
  if (out.num_beams > 1) {
    // Beam search keeps the logits processors (bias, penalties, no-repeat
    // n-gram) but no warper: the server refuses the warpers with it rather
    // than ignore them, so leave them out.
    for (const w of ["temperature", "top_k", "top_p", "min_p"]) delete out[w];
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
    if (at < 1) throw new Error(`logit bias ${JSON.stringify(p)}: want character=bias`);
    let ch = p.slice(0, at);
    if (ch === "space") ch = " ";
    const id = state.model.vocab.indexOf(ch);
    if (id < 0) throw new Error(`logit bias: ${JSON.stringify(ch)} is not in the vocabulary`);
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
  if (!$("seed-random").checked) body.seed = Number($("seed").value);
  const stop = $("stop").value.split("|").filter((s) => s !== "");
  if (stop.length) body.stop = stop.slice(0, 4);
  const bias = parseBias($("bias").value);
  if (Object.keys(bias).length) body.logit_bias = bias;
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

// probColor maps a probability to a background: red (unlikely) to green.
function probColor(p) {
  const hue = 8 + 132 * Math.min(1, Math.max(0, p));
  return `hsl(${hue} 80% 86%)`;
}

function addToken(out, ch, step) {
  const i = state.steps.length;
  state.steps.push(step);
  const span = el("span", "tok", ch === "\n" ? "↵\n" : ch);
  span.dataset.step = i;
  span.tabIndex = 0;
  span.setAttribute("role", "button");
  if (step) {
    const p = Math.exp(step.logprob);
    span.style.background = probColor(p);
    span.title = `${JSON.stringify(ch)}: p = ${p.toFixed(3)} (step ${i + 1})`;
  }
  out.append(span);
}

async function generate() {
  if (!checkPrompt()) return;
  let body;
  try {
    body = requestBody({ stream: true, stream_options: { include_usage: true } });
    // Beam search scores whole sequences: it has no per-step trace.
    if (!(body.num_beams > 1)) body.trace = Math.min(16, state.model.vocab.length);
  } catch (e) {
    $("status").textContent = e.message;
    return;
  }
  const out = $("output");
  out.replaceChildren(el("span", "prompt", body.prompt));
  state.steps = [];
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
      if (chunk.error) throw new Error(chunk.error.message);
      for (const c of chunk.choices) {
        const chars = Array.from(c.text);
        chars.forEach((ch, j) => addToken(out, ch, c.trace ? c.trace[j] : null));
        count += chars.length;
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    const secs = (performance.now() - started) / 1000;
    $("status").textContent = `${count} characters in ${secs.toFixed(2)} s · finish: ${finish} · seed ${seed}` +
      (body.seed === undefined ? " (chosen by the server: send it back to reproduce)" : "");
    if ($("seed-random").checked && seed) $("seed").value = seed;
  } catch (e) {
    $("status").textContent = e.name === "AbortError" ? `Stopped after ${count} characters (the server stopped generating too).` : "Error: " + e.message;
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
  document.querySelectorAll(".tok.selected").forEach((s) => s.classList.remove("selected"));
  const span = document.querySelector(`.tok[data-step="${i}"]`);
  if (span) span.classList.add("selected");
  state.selected = i;
  const chosen = step.candidates.find((c) => c.chosen) || { token: step.token, probs: [] };
  const last = step.stages.length - 1;
  $("inspect-title").textContent = `Step ${i + 1}: drew ${JSON.stringify(step.token)} with probability ${fmt(Math.exp(step.logprob))}`;
  $("inspect-sub").textContent = `Raw probability ${fmt(Math.exp(step.raw_logprob))}. Stages that ran: ${step.stages.join(" → ")}. ` +
    `${step.candidates.length} most likely candidates under the raw distribution:`;
  const bars = $("bars");
  bars.replaceChildren();
  const top = Math.max(...step.candidates.map((c) => Math.max(c.probs[0], c.probs[last])));
  for (const c of step.candidates) {
    const row = el("div", "bar-row" + (c.chosen ? " chosen" : ""));
    const name = el("span", "tokname", c.token === " " ? "␣" : c.token === "\n" ? "↵" : c.token);
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
    tr.append(el("td", null, c.token === " " ? "␣" : c.token));
    for (const p of c.probs) tr.append(el("td", p === 0 ? "zero" : null, fmt(p)));
    table.append(tr);
  }
  $("inspector").hidden = false;
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
      meta.textContent = "Error: " + e.message;
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

// ---- wiring ----

function showTab(name) {
  for (const t of ["generate", "compare"]) {
    const on = t === name;
    $("tab-" + t).classList.toggle("active", on);
    $("tab-" + t).setAttribute("aria-selected", on);
    $("pane-" + t).hidden = !on;
  }
}

function init() {
  buildKnobs();
  $("generate").addEventListener("click", generate);
  $("stop-button").addEventListener("click", () => state.abort && state.abort.abort());
  $("reset").addEventListener("click", () => KNOBS.forEach((k) => k.set(k.value)));
  $("prompt").addEventListener("input", checkPrompt);
  $("model").addEventListener("change", (e) => selectModel(e.target.value));
  $("tab-generate").addEventListener("click", () => showTab("generate"));
  $("tab-compare").addEventListener("click", () => showTab("compare"));
  $("compare-run").addEventListener("click", compare);
  $("api-key").addEventListener("change", (e) => { state.apiKey = e.target.value; loadModels().catch(showLoadError); });
  $("prompt").addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) generate(); });
  const out = $("output");
  out.addEventListener("click", (e) => { if (e.target.dataset.step !== undefined) inspect(Number(e.target.dataset.step)); });
  out.addEventListener("keydown", (e) => {
    if ((e.key === "Enter" || e.key === " ") && e.target.dataset.step !== undefined) { e.preventDefault(); inspect(Number(e.target.dataset.step)); }
  });
  loadModels().catch(showLoadError);
}

function showLoadError(e) { $("status").textContent = "Could not load the models: " + e.message; }

init();
