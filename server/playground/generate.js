// generate.js owns the Generate tab: the streamed generation (a cell per token, so a BPE model's token boundaries show), the per-token inspector and its attention view.
"use strict";

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

// addToken writes one generated token's text, text (a cell per token: a
// token that finishes a character begun by the one before it shares its
// cell, steps holding both), inspectable by its first step.
function addToken(out, text, steps) {
  const i = state.steps.length;
  const step = steps[0] || null;
  for (const st of steps) {
    state.steps.push(st);
    state.tokens.push(st.token);
  }
  if (!steps.length) state.tokens.push(text);
  const span = el("span", "tok", text.replace(/\n/g, "↵\n"));
  span.dataset.step = i;
  span.tabIndex = 0;
  span.setAttribute("role", "button");
  if (step) {
    const bits = steps.reduce((b, st) => b + bitsOf(st.raw_logprob), 0);
    span.classList.add(surpriseClass(bits));
    span.dataset.bits = bits;
    const p = steps.reduce((q, st) => q * Math.exp(st.raw_logprob), 1);
    const drawn = steps.reduce((q, st) => q * Math.exp(st.logprob), 1);
    const of = steps.length > 1 ? ` (${steps.length} tokens of one character)` : "";
    span.title = `${JSON.stringify(text)}${of}: ${fmtBits(bits)} bits of surprise (raw p = ${fmt(p)}, drawn with p = ${fmt(drawn)}), step ${i + 1}`;
  }
  out.append(span);
}

// addChunk writes a streamed chunk's text: with a trace, a cell per token
// (its characters from its text_offset to the next token's); without, a
// cell per character, or for BPE one for the chunk.
function addChunk(out, c, gen) {
  const chars = Array.from(c.text);
  const base = gen.chars;
  gen.chars += chars.length;
  if (!c.trace) {
    if (isBPE()) { if (chars.length) addToken(out, c.text, []); } else chars.forEach((ch) => addToken(out, ch, []));
    return chars.length;
  }
  for (const [from, to, j, k] of cellsByOffset(c.trace.map((st) => st.text_offset - base), chars.length)) {
    addToken(out, chars.slice(from, to).join(""), c.trace.slice(j, k));
  }
  if (!c.trace.length && chars.length) addToken(out, c.text, []); // text a stop string cut inside a token
  return c.trace.length;
}

// showPrompt writes the prompt, a cell per token for a BPE model (whose
// tokens POST /v1/tokenize gives), and returns its tokens, which the
// attention view names.
async function showPrompt(out, prompt) {
  if (!isBPE()) {
    out.append(el("span", "prompt", prompt));
    return Array.from(prompt);
  }
  const resp = await fetch("v1/tokenize", { method: "POST", headers: headers(), body: JSON.stringify({ model: state.model.id, text: prompt }) });
  if (!resp.ok) throw await apiError(resp);
  const toks = (await resp.json()).tokens;
  const chars = Array.from(prompt);
  for (const [from, to] of cellsByOffset(toks.map((t) => t.text_offset), chars.length)) {
    out.append(el("span", "prompt ptok", chars.slice(from, to).join("")));
  }
  return toks.map((t) => t.token);
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
      body.trace = Math.min(16, state.model.vocab_size);
      const m = state.model;
      if (body.max_tokens * m.layers * m.heads * m.context_length <= MAX_ATTENTION_FLOATS) body.trace_attention = true;
    }
  } catch (e) {
    showError(errBox, e);
    return;
  }
  const out = $("output");
  out.replaceChildren();
  out.classList.toggle("bpe", isBPE());
  state.steps = [];
  state.abort = new AbortController();
  $("inspector").hidden = true;
  $("generate").disabled = true;
  $("stop-button").disabled = false;
  $("status").textContent = "Generating…";
  const started = performance.now();
  let seed = null, finish = null, count = 0, incomplete = false;
  const gen = { chars: 0 };
  try {
    state.tokens = await showPrompt(out, body.prompt);
    state.promptLen = state.tokens.length;
    const resp = await fetch("v1/completions", {
      method: "POST", headers: headers(), body: JSON.stringify(body), signal: state.abort.signal,
    });
    if (!resp.ok) throw await apiError(resp);
    seed = resp.headers.get("Minigpt-Seed");
    for await (const data of readEvents(resp)) {
      if (data === "[DONE]") break;
      const chunk = JSON.parse(data);
      if (chunk.error) throw Object.assign(new Error(chunk.error.message), { status: 400, code: chunk.error.code, param: chunk.error.param });
      if (chunk.usage) count = chunk.usage.completion_tokens;
      for (const c of chunk.choices) {
        const n = addChunk(out, c, gen);
        if (!chunk.usage) count += n;
        if (c.finish_reason) finish = c.finish_reason;
        if (c.format_incomplete) incomplete = true;
      }
    }
    const secs = (performance.now() - started) / 1000;
    const drawn = mode() === "sample";
    const what = isBPE() ? `${count} tokens · ${gen.chars} characters` : `${gen.chars} characters`;
    $("status").textContent = `${what} in ${secs.toFixed(2)} s · finish: ${finish}` + (drawn ? ` · seed ${seed}` : "") +
      (drawn && body.seed === undefined ? " (chosen by the server: send it back to reproduce)" : "") +
      (incomplete ? " · the text ended before its format was complete (a stop string or the time limit cut it)" : "");
    if ($("seed-random").checked && seed && drawn) $("seed").value = seed;
  } catch (e) {
    if (e.name === "AbortError") {
      $("status").textContent = `Stopped after ${gen.chars} characters (the server stopped generating too).`;
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
  $("inspect-title").textContent = `Step ${i + 1}: drew ${quoteToken(step.token)} with probability ${fmt(Math.exp(step.logprob))}`;
  $("inspect-sub").textContent = `Raw probability ${fmt(Math.exp(step.raw_logprob))}: ${fmtBits(bitsOf(step.raw_logprob))} bits of surprise. Stages that ran: ${step.stages.join(" → ")}. ` +
    `${step.candidates.length} most likely candidates under the raw distribution:`;
  showFormatStage(step);
  const bars = $("bars");
  bars.replaceChildren();
  const top = Math.max(...step.candidates.map((c) => Math.max(c.probs[0], c.probs[last])));
  const g = step.stages.indexOf("grammar");
  for (const c of step.candidates) {
    const row = el("div", "bar-row" + (c.chosen ? " chosen" : ""));
    row.dataset.token = c.token;
    if (g >= 0) row.dataset.format = c.probs[g] > 0 ? "allowed" : "cut";
    const name = el("span", "tokname", visible(c.token));
    name.append(el("small", null, "#" + c.id));
    row.append(name, track("raw", c.probs[0], top), track("final", c.probs[last], top));
    if (c.chosen) row.append(el("span", "tag chosen", "★ chosen"));
    else if (c.cut_by) {
      const tag = el("span", "tag cut" + (c.cut_by === "grammar" ? " format" : ""), "cut by " + c.cut_by);
      if (c.cut_by === "grammar") tag.title = "the format allows no text that goes on with this token";
      row.append(tag);
    }
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
  // The newest characters, at the right end, weigh the most as a rule:
  // a strip wider than its box starts scrolled to them.
  for (const strip of document.querySelectorAll("#attn-grid .strip")) strip.scrollLeft = strip.scrollWidth;
}

// showFormatStage shows the format's stage (grammar) of a step: which of
// the traced candidates the format allowed there and which it cut. The
// trace holds the most likely candidates under the raw distribution (and
// the chosen one), not the whole vocabulary, so the lists are of those.
function showFormatStage(step) {
  const box = $("inspect-format");
  const g = step.stages.indexOf("grammar");
  box.hidden = g < 0;
  if (g < 0) return;
  const allowed = step.candidates.filter((c) => c.probs[g] > 0);
  const cut = step.candidates.filter((c) => c.probs[g] === 0);
  const kept = allowed.reduce((p, c) => p + c.probs[0], 0);
  $("format-stage-sub").textContent = `The format (stage grammar, after raw) allowed ${allowed.length} of the ${step.candidates.length} candidates below ` +
    `and cut ${cut.length}: no text of the format goes on with those. The allowed ones held ${fmt(kept)} of the raw probability; the rest is shared out among them.`;
  const list = (id, cs) => {
    const ul = $(id);
    ul.replaceChildren();
    for (const c of cs) {
      const chip = el("span", "chip", visible(c.token));
      chip.dataset.token = c.token;
      chip.title = `token ${c.id}`;
      ul.append(chip);
    }
    if (!cs.length) ul.append(el("span", "muted", "none"));
  };
  list("format-allowed", allowed);
  list("format-cut", cut);
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
  const ctx = state.tokens.slice(pos - n, pos);
  const unit = isBPE() ? "tokens" : "characters";
  $("attention-sub").textContent = `To choose ${quoteToken(step.token)}, each head weighed the ${n} ${unit} before it, the newest at the right (darker: more weight; each strip sums to 1).`;
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
