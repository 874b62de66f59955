// generate.js owns the Generate tab: the streamed generation, the per-character inspector and its attention view.
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
  // The newest characters, at the right end, weigh the most as a rule:
  // a strip wider than its box starts scrolled to them.
  for (const strip of document.querySelectorAll("#attn-grid .strip")) strip.scrollLeft = strip.scrollWidth;
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
  $("attention-sub").textContent = `To choose ${JSON.stringify(step.token)}, each head weighed the ${n} characters before it, the newest at the right (darker: more weight; each strip sums to 1).`;
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
