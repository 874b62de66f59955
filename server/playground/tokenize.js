// tokenize.js owns the Tokenize tab: a text as the model's tokenizer (or GPT-2's) splits it, a coloured cell per token with its id, and the merges that built a chosen token, step by step.
"use strict";

const tok = { timer: null, res: null, steps: [], at: 0, seq: 0 };

// tokenizer is the tokenizer chosen: the model's, or GPT-2's.
function tokenizer() { return $("tok-gpt2").checked ? "gpt2" : "model"; }

// tokenizeModelChanged names the model's tokenizer, and offers GPT-2's
// when the server has it, saying how to get it when not.
function tokenizeModelChanged() {
  const m = state.model;
  $("tok-model-label").textContent = `the model's (${m.tokenizer_description})`;
  const gpt2 = state.tokenizers.find((t) => t.id === "gpt2");
  $("tok-gpt2").disabled = !gpt2;
  if (!gpt2) $("tok-model").checked = true;
  $("tok-gpt2-why").hidden = !!gpt2;
  $("tok-gpt2-why").textContent = gpt2 ? "" : "GPT-2's is off: start the server with serve -gpt2 DIR (GPT-2's encoder.json and vocab.bpe) to compare.";
  if ($("main").dataset.tab === "tokenize") tokenize();
}

async function tokenize() {
  const which = tokenizer();
  const body = { text: $("tok-text").value, tokenizer: which };
  if (which === "model") body.model = state.model.id;
  const errBox = $("tok-error");
  const seq = ++tok.seq; // only the latest answer is shown
  try {
    const resp = await fetch("v1/tokenize", { method: "POST", headers: headers(), body: JSON.stringify(body) });
    if (!resp.ok) throw await apiError(resp);
    const res = await resp.json();
    if (seq !== tok.seq) return;
    hideError(errBox);
    tok.res = res;
    renderTokens(res, body.text);
  } catch (e) {
    if (seq !== tok.seq) return;
    // Cells of an earlier text would pass for this one's.
    tok.res = null;
    for (const id of ["tok-cells", "tok-summary"]) $(id).replaceChildren();
    $("tok-note").hidden = true;
    $("tok-merges").hidden = true;
    showError(errBox, e);
    if (e.code === "unknown_character") {
      errBox.querySelector(".say").textContent += " A BPE model, or GPT-2's tokenizer, splits any text.";
    }
  }
}

// cellLabel is a token's text as a cell shows it, and whether it is bytes
// (part of a character).
function cellLabel(t) {
  return { text: visible(t.token), bytes: t.token.startsWith("bytes:") };
}

function tokenCell(t, colour) {
  const cell = el("span", "cell c" + (colour % 6));
  const { text, bytes } = cellLabel(t);
  const txt = el("span", "t" + (bytes ? " bytes" : ""), text);
  cell.append(txt, el("small", "id", String(t.id)));
  return cell;
}

function renderTokens(res, text) {
  const box = $("tok-cells");
  box.replaceChildren();
  const chars = Array.from(text);
  res.tokens.forEach((t, i) => {
    const cell = tokenCell(t, i);
    cell.dataset.i = i;
    cell.tabIndex = 0;
    cell.setAttribute("role", "button");
    const ch = chars[t.text_offset] || "";
    cell.title = `token ${t.id}: ${t.bytes.length} byte${t.bytes.length === 1 ? "" : "s"} (${t.start}–${t.end}), at character ${t.text_offset}` +
      (t.token.startsWith("bytes:") ? ` — part of ${JSON.stringify(ch)} (U+${ch.codePointAt(0)?.toString(16).toUpperCase().padStart(4, "0")}), whose other bytes are in the tokens beside it` : "");
    box.append(cell);
  });
  const n = res.tokens.length;
  const per = n ? (res.bytes / n).toFixed(2) : "–";
  const sum = $("tok-summary");
  sum.replaceChildren();
  for (const [value, after, id] of [
    [n.toLocaleString("en"), n === 1 ? "token" : "tokens", "tok-n"],
    [res.characters.toLocaleString("en"), "characters", "tok-chars"],
    [res.bytes.toLocaleString("en"), "bytes", "tok-bytes"],
    [per, "bytes per token", "tok-per"],
  ]) {
    const b = el("span", "total");
    b.id = id;
    b.append(el("b", null, value), document.createTextNode(" " + after));
    sum.append(b);
  }
  sum.append(el("span", "total muted", res.tokenizer === "gpt2" ? res.description : `${res.model}'s: ${res.description}`));
  const note = $("tok-note");
  note.hidden = res.type !== "char";
  note.textContent = res.type === "char"
    ? `This model reads characters: each character is one token (${res.tokens.length} characters, ${res.tokens.length} tokens), its id its place in the model's ${res.vocab_size} characters. Nothing is merged; a BPE model, or GPT-2's tokenizer, builds tokens of several characters.`
    : "";
  $("tok-merges").hidden = true;
}

// mergeSteps returns how token id was built: its bytes, then after each
// merge of its tree, in rank order (the order the tokenizer applies
// them), the pieces; each step says which merge made which piece.
function mergeSteps(nodes, id) {
  const build = (k) => {
    const n = nodes[k];
    return { id: Number(k), n, left: n.left === undefined ? null : build(n.left), right: n.right === undefined ? null : build(n.right) };
  };
  const root = build(id);
  const leaves = [], inner = [];
  const walk = (x) => {
    if (!x.left) { leaves.push(x); return; }
    walk(x.left); walk(x.right);
    inner.push(x);
  };
  walk(root);
  const ranks = [...new Set(inner.map((x) => x.n.rank))].sort((a, b) => a - b);
  let seq = leaves.slice();
  const steps = [{ seq, made: null }];
  for (const r of ranks) {
    const made = inner.filter((x) => x.n.rank === r);
    const next = [];
    for (let i = 0; i < seq.length; i++) {
      const m = made.find((x) => x.left === seq[i] && x.right === seq[i + 1]);
      if (m) { next.push(m); i++; } else next.push(seq[i]);
    }
    seq = next;
    steps.push({ seq, made: made[0], count: made.length });
  }
  return steps;
}

function showMerges(i) {
  const res = tok.res;
  const t = res && res.tokens[i];
  if (!t) return;
  document.querySelectorAll("#tok-cells .cell.selected").forEach((c) => c.classList.remove("selected"));
  document.querySelector(`#tok-cells .cell[data-i="${i}"]`)?.classList.add("selected");
  $("tok-merges").hidden = false;
  $("tok-merge-title").textContent = `Token ${t.id}: ${JSON.stringify(cellLabel(t).text)}, ${t.bytes.length} byte${t.bytes.length === 1 ? "" : "s"}`;
  if (!res.nodes) {
    $("tok-merge-sub").textContent = "A character vocabulary's tokens are its characters: nothing is merged. A BPE model, or GPT-2's tokenizer, builds tokens from bytes.";
    tok.steps = [];
    for (const id of ["tok-nav", "tok-seq", "tok-steps"]) $(id).hidden = true;
    return;
  }
  for (const id of ["tok-nav", "tok-seq", "tok-steps"]) $(id).hidden = false;
  tok.steps = mergeSteps(res.nodes, t.id);
  const merges = tok.steps.length - 1;
  $("tok-merge-sub").textContent = merges === 0
    ? "A single byte: the tokenizer starts from the 256 bytes, so this token needs no merge."
    : `Built from its ${t.bytes.length} bytes by ${merges} merge${merges === 1 ? "" : "s"}, applied in the order the tokenizer learnt them (its rank): step through them.`;
  const list = $("tok-steps");
  list.replaceChildren();
  tok.steps.slice(1).forEach((st, k) => {
    const m = st.made;
    const li = el("li", null, `merge #${m.n.rank}: ${visible(m.left.n.token)} + ${visible(m.right.n.token)} → ${visible(m.n.token)} (token ${m.id})` + (st.count > 1 ? ` ×${st.count}` : ""));
    li.dataset.step = k + 1;
    list.append(li);
  });
  showStep(0);
}

// showStep shows the pieces after merge k (0: the bytes).
function showStep(k) {
  const steps = tok.steps;
  if (!steps.length) return;
  k = Math.max(0, Math.min(k, steps.length - 1));
  tok.at = k;
  const st = steps[k];
  const seq = $("tok-seq");
  seq.replaceChildren();
  st.seq.forEach((x, j) => {
    const cell = tokenCell({ token: x.n.token, id: x.id }, j);
    if (st.made && st.made.id === x.id) cell.classList.add("made");
    seq.append(cell);
  });
  $("tok-step").textContent = k === 0 ? `the bytes (step 0 of ${steps.length - 1})` : `after merge ${k} of ${steps.length - 1}`;
  $("tok-prev").disabled = k === 0;
  $("tok-next").disabled = k === steps.length - 1;
  document.querySelectorAll("#tok-steps li").forEach((li) => li.classList.toggle("current", Number(li.dataset.step) === k));
}

function initTokenize() {
  $("tok-text").addEventListener("input", () => {
    clearTimeout(tok.timer);
    tok.timer = setTimeout(tokenize, 200);
  });
  for (const id of ["tok-model", "tok-gpt2"]) $(id).addEventListener("change", tokenize);
  const pick = (e) => {
    const c = e.target.closest(".cell");
    if (c && c.dataset.i !== undefined) showMerges(Number(c.dataset.i));
  };
  $("tok-cells").addEventListener("click", pick);
  $("tok-cells").addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); pick(e); } });
  $("tok-prev").addEventListener("click", () => showStep(tok.at - 1));
  $("tok-next").addEventListener("click", () => showStep(tok.at + 1));
  $("tok-steps").addEventListener("click", (e) => { if (e.target.dataset.step) showStep(Number(e.target.dataset.step)); });
}
