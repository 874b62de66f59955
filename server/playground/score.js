// score.js owns the Score tab: a text coloured by how surprised the model is at each token (a character, or a BPE token with its boundaries shown).
"use strict";

async function score() {
  const errBox = $("score-error");
  hideError(errBox);
  const text = $("score-text").value;
  const u = unknownChar(text);
  $("score-text-error").textContent = u ? unknownCharMessage(u, text) : "";
  if (u) return;
  $("score-run").disabled = true;
  try {
    const resp = await fetch("v1/score", {
      method: "POST", headers: headers(),
      body: JSON.stringify({ model: state.model.id, text, stride: Number($("score-stride").value), top_n: Math.min(5, state.model.vocab_size) }),
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
  out.classList.toggle("bpe", isBPE());
  out.replaceChildren(el("span", "prompt", chars.slice(0, res.tokens[0]?.text_offset ?? chars.length).join("")));
  for (const [from, to, j, k] of cellsByOffset(res.tokens.map((t) => t.text_offset), chars.length)) {
    const toks = res.tokens.slice(j, k);
    const bits = toks.reduce((b, t) => b + t.bits, 0);
    const text = chars.slice(from, to).join("");
    const span = el("span", "tok " + surpriseClass(bits), text.replace(/\n/g, "↵\n"));
    span.dataset.score = j;
    span.dataset.bits = bits;
    span.tabIndex = 0;
    span.setAttribute("role", "button");
    const of = toks.length > 1 ? ` (${toks.length} tokens of one character)` : "";
    span.title = `${JSON.stringify(text)}${of}: ${fmtBits(bits)} bits (p = ${fmt(toks.reduce((q, t) => q * Math.exp(t.logprob), 1))}) after ${toks[0].context} ${isBPE() ? "tokens" : "characters"}`;
    out.append(span);
  }
  const s = res.summary;
  const totals = $("score-totals");
  totals.replaceChildren();
  const rows = isBPE() ? [
    ["", s.tokens.toLocaleString("en"), `tokens scored (${s.characters.toLocaleString("en")} characters)`, "score-n"],
    ["loss", s.loss.toFixed(4), "nats per token", "score-loss"],
    ["perplexity", s.perplexity.toFixed(3), "", "score-ppl"],
    ["", s.bits_per_token.toFixed(3), "bits per token", "score-bpt"],
    ["", s.bits_per_char.toFixed(3), "bits per character", "score-bpc"],
  ] : [
    ["", s.tokens.toLocaleString("en"), "characters scored", "score-n"],
    ["loss", s.loss.toFixed(4), "nats per character", "score-loss"],
    ["perplexity", s.perplexity.toFixed(3), "", "score-ppl"],
    ["", s.bits_per_char.toFixed(3), "bits per character", "score-bpc"],
  ];
  // Bits per byte put a character model and a BPE model on one scale.
  rows.push(["", s.bits_per_byte.toFixed(3), "bits per byte", "score-bpb"]);
  for (const [before, value, after, id] of rows) {
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
  const unit = isBPE() ? "Token" : "Character";
  $("score-title").textContent = `${unit} ${t.pos} (counting from 0), ${JSON.stringify(t.token)}: ${fmtBits(t.bits)} bits of surprise`;
  $("score-sub").textContent = `The model gave it probability ${fmt(Math.exp(t.logprob))} after ${t.context} ${unit.toLowerCase()}s of context. Its top predictions there:`;
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
