// compare.js owns the Compare tab: the lessons' decoding strategies side by side, with where each starts to loop.
"use strict";

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
  $("compare-run").disabled = $("generate").disabled = true;
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
  $("compare-run").disabled = $("generate").disabled = false;
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
