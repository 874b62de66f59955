// score.js owns the Score tab: a text coloured by how surprised the model is at each character.
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
  $("score-title").textContent = `Character ${t.pos} (counting from 0), ${JSON.stringify(t.token)}: ${fmtBits(t.bits)} bits of surprise`;
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
