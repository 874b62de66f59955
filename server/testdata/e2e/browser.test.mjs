// Headless Chromium (Debian's, driven by playwright-core) on the
// playground: load the page, generate, inspect a character's
// distribution, stop a long generation, run the strategy comparison;
// the first-contact checks at 1366×768 and 390×844 (Generate in view,
// the shortcut, the surprise scale and its legend, a disabled knob with
// its reason, an error where the user looks, the wording); train Lantern
// Bay from scratch in the page, generate with the new model, see that it
// is saved and remove it; score a text; open the attention view; and
// save screenshots. playground.test.mjs has the layout's checks.
//
// e2e.sh starts the server (with -training -train-dir, from the
// repository's root so that it serves the shipped models) and sets
// MINIGPT_PAGE (the playground's URL), MINIGPT_KEY, MINIGPT_SHOTS (the
// folder for screenshots) and optionally MINIGPT_HTML_MODEL (a model
// whose vocabulary holds "<", ">" and quotes).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import * as b from "./browser.mjs";

const { pageURL, shots, watch, open } = b;
let context, page, closeBrowser;

before(async () => {
  ({ context, page, close: closeBrowser } = await b.launch());
});

after(async () => {
  await closeBrowser?.();
});

const setKnob = (name, value, p = page) => b.setKnob(p, name, value);
const generateAndWait = (p = page) => b.generateAndWait(p);
const waitGenerated = (p = page) => b.waitGenerated(p);

test("generate streams the text cmd/generate prints, each character inspectable", async () => {
  await page.selectOption("#model", "lanternbay");
  await page.fill("#prompt", "the ");
  await page.fill("#max_tokens", "120");
  await page.fill("#seed", "42");
  await setKnob("temperature", 0.8);
  const status = await generateAndWait();
  assert.match(status, /120 characters in .* finish: length · seed 42/);
  const text = await page.$$eval("#output .tok", (spans) => spans.map((s) => s.textContent).join(""));
  // go run ./cmd/generate -temperature 0.8 -seed 42 -n 60 prints this
  // (prompt included): the page's first 60 characters must match.
  assert.equal(("the " + text).slice(0, 64), "the boats and writes the count in a book. the lantern burns all ");
  assert.equal(await page.locator("#output .tok").count(), 120);
});

test("a character's distribution: raw vs final bars, chosen marked, cuts labelled; and where each head looked", async () => {
  await setKnob("temperature", 1.2);
  await setKnob("top_k", 6);
  await setKnob("top_p", 0.8);
  await page.fill("#seed", "7");
  await page.fill("#max_tokens", "240");
  await generateAndWait();
  // Open the step where the model was the most surprised.
  const i = await page.evaluate(() => {
    const spans = [...document.querySelectorAll("#output .tok")];
    let best = 0;
    spans.forEach((s, j) => { if (Number(s.dataset.bits) > Number(spans[best].dataset.bits)) best = j; });
    return best;
  });
  await page.click(`#output .tok[data-step="${i}"]`);
  await page.locator("#inspector").waitFor({ state: "visible" });
  const rows = page.locator("#bars .bar-row");
  assert.equal(await rows.count(), 16);
  assert.equal(await page.locator("#bars .bar-row.chosen").count(), 1);
  const cuts = await page.$$eval("#bars .tag.cut", (ts) => ts.map((t) => t.textContent));
  // top-k 6 leaves 6 of the 16 candidates at most: 10 or more are cut,
  // and at least 10 by top-k itself.
  assert.ok(cuts.length >= 10, `${cuts.length} cut candidates`);
  assert.ok(cuts.filter((c) => c === "cut by top-k").length >= 10, cuts.join(", "));
  const title = await page.textContent("#inspect-title");
  assert.match(title, new RegExp(`^Step ${i + 1}: drew `));
  const stages = await page.$$eval("#stages tr:first-child th", (th) => th.map((t) => t.textContent));
  assert.deepEqual(stages.slice(1), ["raw", "temperature", "top-k", "top-p"]);
  // The attention view: a strip per layer and head (2 × 4), over the
  // characters before the inspected one, the strongest ones named.
  const heads = page.locator("#attn-grid .attn-head");
  assert.equal(await heads.count(), 8);
  const cells = await page.$$eval('#attn-grid .attn-head[data-layer="0"][data-head="0"] .cell', (cs) => cs.map((c) => c.textContent));
  assert.equal(cells.length, Math.min(32, 4 + i), `the window of step ${i + 1}`);
  assert.match(await page.textContent("#attn-grid .attn-head .top"), /^head 1: '.+' \d+% · /);
  await page.click("#inspector summary");
  await page.screenshot({ path: join(shots, "playground.png"), fullPage: true });
  await page.click("#inspector summary"); // closed again
});

test("Stop aborts the request and the server stops generating", async () => {
  const metric = async () => {
    const r = await page.request.get(new URL("metrics", pageURL).href);
    return Number(/minigpt_generations_cancelled_total (\d+)/.exec(await r.text())[1]);
  };
  const before = await metric();
  // The Shakespeare model, eight times the embedded one's size, is still
  // writing its 4,000 tokens when Stop is pressed: the embedded model can
  // finish them all into the socket's buffers first, leaving nothing to
  // cancel.
  await page.selectOption("#model", "shakespeare");
  await setKnob("top_k", 0);
  await setKnob("top_p", 1);
  await page.fill("#max_tokens", "4000");
  await page.click("#generate");
  await page.waitForFunction(() => document.querySelectorAll("#output .tok").length >= 20);
  await page.click("#stop-button");
  await page.waitForFunction(() => /Stopped/.test(document.querySelector("#status").textContent));
  const n = await page.locator("#output .tok").count();
  assert.ok(n < 4000, `${n} characters after Stop`);
  // The server counts the generation as cancelled (its slot is free).
  for (let t = 0; t < 100 && (await metric()) === before; t++) await page.waitForTimeout(50);
  assert.equal(await metric(), before + 1);
  await page.selectOption("#model", "lanternbay");
});

test("beam search from the num_beams knob, the knobs it ignores disabled with the reason", async () => {
  await page.click("#reset");
  await setKnob("num_beams", 4);
  for (const k of ["temperature", "top_k", "top_p", "min_p"]) {
    assert.ok(await page.isDisabled(`#knob-${k}`), `${k} enabled with beams`);
    assert.match(await page.textContent(`#why-${k}`), /no effect with beam search/);
    assert.ok(await page.isVisible(`#why-${k}`));
  }
  assert.ok(await page.isEnabled("#knob-repetition_penalty"), "beam search keeps the penalties");
  await page.fill("#prompt", "a");
  await page.fill("#max_tokens", "40");
  await generateAndWait();
  const text = await page.$$eval("#output .tok", (spans) => spans.map((s) => s.textContent).join(""));
  // go run ./cmd/generate -beams 4 -n 40 -prompt a
  assert.equal("a" + text, "ats and writes the count in a book. the l");
  await page.click("#reset");
  assert.ok(await page.isEnabled("#knob-temperature"));
  assert.ok(await page.isHidden("#why-temperature"));
});

test("compare: the five strategies side by side, greedy's loop onset marked", async () => {
  await page.fill("#prompt", "the ");
  await page.fill("#seed", "42");
  await page.click("#tab-compare");
  await page.fill("#compare-tokens", "400");
  await page.click("#compare-run");
  await page.waitForFunction(() => [...document.querySelectorAll("#compare .card .meta")].every((m) => !/generating/.test(m.textContent)), null, { timeout: 60_000 });
  const labels = await page.$$eval("#compare .card h3", (hs) => hs.map((h) => h.textContent));
  assert.deepEqual(labels, ["greedy", "temperature=0.8", "top_k=5", "top_p=0.9", "temperature=1.5"]);
  // go run ./cmd/generate -greedy -n 400 -loops reports: "the 20-character
  // window at character 105 repeats later".
  assert.equal(await page.getAttribute('#compare .card[data-strategy="greedy"]', "data-loop"), "105");
  assert.match(await page.textContent('#compare .card[data-strategy="greedy"] .meta'), /loops from character 105/);
  // The marked window is the corpus text at character 105, and it recurs.
  const onset = await page.textContent('#compare .card[data-strategy="greedy"] mark.onset');
  assert.equal(onset, " boat drifts near th");
  assert.equal(await page.textContent('#compare .card[data-strategy="greedy"] mark.again'), onset);
  await page.screenshot({ path: join(shots, "playground-compare.png"), fullPage: true });
  await page.click("#tab-generate");
});

// The first-contact checks of issue 31, on a laptop and on a phone.
for (const [w, h, shot] of [[1366, 768, "playground-laptop.png"], [390, 844, "playground-phone.png"]]) {
  test(`at ${w}×${h}: Generate in view with its shortcut, a surprise scale with a legend, knobs disabled with the reason, errors where the user looks`, async () => {
    const p = await context.newPage();
    watch(p);
    await p.setViewportSize({ width: w, height: h });
    await open(p);
    await p.selectOption("#model", "lanternbay");
    const inView = async (sel) => {
      const b = await p.locator(sel).boundingBox();
      return b && b.y >= 0 && b.y + b.height <= h && b.x >= 0 && b.x + b.width <= w;
    };
    // Generate is reachable without scrolling, and says its shortcut.
    assert.equal(await p.evaluate(() => window.scrollY), 0);
    assert.ok(await inView("#generate"), "the Generate button is below the fold");
    assert.match(await p.textContent("#generate"), /Generate\s*(Ctrl|⌘)\+Enter/);
    // The shortcut works.
    await p.fill("#max_tokens", "200");
    await p.fill("#seed", "42");
    await p.press("#prompt", "Control+Enter");
    assert.match(await waitGenerated(p), /200 characters in/);
    // The colour says something at default settings: the characters
    // fall in several of the legend's bins, each the bin of its surprise.
    const bins = await p.$$eval("#output .tok", (spans) => spans.map((s) => [s.className.match(/\bs(\d)\b/)[1], Number(s.dataset.bits)]));
    const edges = [0, 0.25, 1, 2, 4, 8, Infinity];
    for (const [bin, bits] of bins) assert.ok(bits >= edges[bin] && bits < edges[Number(bin) + 1], `${bits} bits in bin ${bin}`);
    const used = new Set(bins.map(([bin]) => bin));
    assert.ok(used.size >= 3, `only bins ${[...used]} are used`);
    assert.ok(await p.isVisible("#pane-generate .legend"));
    assert.match(await p.textContent("#pane-generate .legend"), /surprise, in bits:.*< ¼.*8 \+.*1 bit: a coin flip/s);
    // A knob with no effect is disabled, the reason beside it.
    if (w < 900) await p.click("#knob-panel summary");
    await setKnob("temperature", 0, p);
    for (const k of ["presence_penalty", "repetition_penalty", "top_k"]) {
      assert.ok(await p.isDisabled(`#knob-${k}`), `${k} enabled when greedy`);
      assert.match(await p.textContent(`#why-${k}`), /temperature 0 \(greedy\)/);
    }
    assert.ok(await p.isDisabled("#bias"));
    assert.match(await p.textContent("#bias-why"), /greedy/);
    assert.ok(await p.isDisabled("#seed"));
    await setKnob("temperature", 1, p);
    assert.ok(await p.isEnabled("#knob-presence_penalty") && await p.isEnabled("#bias"));
    if (w < 900) await p.click("#knob-panel summary");
    // An error shows where the text would be, in a learner's words; the
    // API's message is one click away.
    await p.evaluate(() => window.scrollTo(0, 0));
    await p.fill("#max_tokens", "99999");
    await p.click("#generate");
    await p.locator("#gen-error").waitFor({ state: "visible" });
    assert.ok(await inView("#gen-error"), "the error is out of view");
    const say = await p.textContent("#gen-error .say");
    assert.equal(say, "Ask for at most 4096 characters at a time (max tokens).");
    assert.ok(!(await p.isVisible("#gen-error .api")), "the API's message shows before it is asked for");
    await p.click("#gen-error summary");
    assert.match(await p.textContent("#gen-error .api"), /^400 invalid_value \(max_tokens\): max_tokens 99999 is out of range/);
    assert.equal(await p.textContent("#status"), "", "the error is repeated in the status line");
    await p.screenshot({ path: join(shots, shot) });
    // No wording that assumes the wide layout.
    const words = await p.evaluate(() => document.body.innerText);
    assert.doesNotMatch(words, /\b(at|on|to) the (left|right)\b/i);
    await p.fill("#max_tokens", "200");
    await p.click("#generate");
    await waitGenerated(p);
    assert.ok(await p.isHidden("#gen-error"), "the error stays after a success");
    await p.close();
  });
}

test("train Lantern Bay from scratch in the page: the curve falls, samples appear, and Generate with it uses the new model", async () => {
  await page.click("#tab-train");
  assert.ok(await page.isHidden("#train-off"), "the page says training is off");
  await page.check("#train-lanternbay");
  await page.selectOption("#train-base", "scratch");
  await page.fill("#train-steps", "200");
  await page.fill("#train-sample-every", "20");
  await page.fill("#train-seed", "42");
  await page.click("#train-run");
  await page.waitForFunction(() => /^Step \d+ of 200/.test(document.querySelector("#train-status").textContent), null, { timeout: 60_000 });
  // The curve draws while it trains.
  await page.waitForFunction(() => Number(document.querySelector("#train-curve polyline.train").dataset.n) > 5, null, { timeout: 60_000 });
  await page.waitForFunction(() => /^Done/.test(document.querySelector("#train-status").textContent) || !document.querySelector("#train-error").hidden, null, { timeout: 120_000 });
  // e2e.sh starts this server with -train-dir: the page says the model is saved.
  assert.match(await page.textContent("#train-status"), /^Done: 200 steps\. The new model is ft:scratch:playground:[0-9a-f]{8}, saved as ft-scratch-playground-[0-9a-f]{8}\.ckpt in the server's training directory\.$/);
  const curve = async (cls) => page.$eval(`#train-curve polyline.${cls}`, (pl) => pl.getAttribute("points").split(" ").filter(Boolean).map((xy) => xy.split(",").map(Number)));
  const trainPts = await curve("train"), valPts = await curve("val");
  assert.equal(trainPts.length, 200);
  assert.equal(valPts.length, 20);
  // SVG y grows downwards: a falling loss is a rising y.
  const mean = (ps) => ps.reduce((a, [, y]) => a + y, 0) / ps.length;
  assert.ok(mean(trainPts.slice(-20)) > mean(trainPts.slice(0, 20)) + 100, "the training loss did not fall");
  assert.ok(valPts.at(-1)[1] > valPts[0][1], "the validation loss did not fall");
  const sample = await page.textContent("#train-sample");
  assert.equal([...sample].length, 81);
  assert.match(await page.textContent("#train-sample-step"), /at step 200/);
  await page.screenshot({ path: join(shots, "playground-train.png"), fullPage: true });

  await page.click("#train-use");
  const name = await page.inputValue("#model");
  assert.match(name, /^ft:scratch:playground:/);
  assert.ok(await page.isVisible("#pane-generate"));
  await page.fill("#prompt", "the ");
  await page.fill("#max_tokens", "120");
  await page.fill("#seed", "1");
  const status = await generateAndWait();
  assert.match(status, /120 characters in/);
  // The text is the new model's: the API gives the same for the seed.
  const r = await page.request.post(new URL("v1/completions", pageURL).href, {
    headers: { Authorization: "Bearer " + process.env.MINIGPT_KEY },
    data: { model: name, prompt: "the ", max_tokens: 120, seed: 1 },
  });
  const text = await page.$$eval("#output .tok", (spans) => spans.map((s) => s.textContent).join(""));
  assert.equal(text, (await r.json()).choices[0].text);
  // Its attention view opens for any character.
  await page.click('#output .tok[data-step="40"]');
  await page.locator("#attn-grid .attn-head").first().waitFor();
  assert.equal(await page.locator("#attn-grid .attn-head").count(), 8);
  assert.equal(await page.locator('#attn-grid .attn-head[data-layer="1"][data-head="3"] .cell').count(), 32);
  await page.locator("#inspector").screenshot({ path: join(shots, "playground-attention.png") });

  // The model is listed among those trained here, saved, and Remove takes
  // it off the server and out of the model menu.
  await page.click("#tab-train");
  const row = page.locator(`#tuned-list li[data-model="${name}"]`);
  await row.waitFor();
  assert.match(await row.textContent(), /saved as ft-scratch-playground-[0-9a-f]{8}\.ckpt in the server's training directory/);
  await row.locator("button.remove").click();
  await row.waitFor({ state: "detached" });
  assert.ok(!(await page.$$eval("#model option", (os) => os.map((o) => o.value))).includes(name), "the removed model is still in the menu");
  const gone = await page.request.get(new URL(`v1/models/${encodeURIComponent(name)}`, pageURL).href, { headers: { Authorization: "Bearer " + process.env.MINIGPT_KEY } });
  assert.equal(gone.status(), 404);
  assert.ok(await page.isHidden("#train-use"), "Generate with it still offers the removed model");
});

test("Stop cancels a training run", async () => {
  await page.click("#tab-train");
  await page.fill("#train-steps", "5000");
  await page.click("#train-run");
  await page.waitForFunction(() => /^Step \d+ of 5000/.test(document.querySelector("#train-status").textContent), null, { timeout: 60_000 });
  await page.click("#train-stop");
  await page.waitForFunction(() => /^Stopped after step \d+/.test(document.querySelector("#train-status").textContent), null, { timeout: 30_000 });
  assert.ok(await page.isHidden("#train-use"));
  await page.fill("#train-steps", "200");
});

test("a training error in a learner's words: a character the model to fine-tune does not know", async () => {
  await page.check("#train-mine");
  await page.fill("#train-text", "the lamp keeper walks the wall. ".repeat(20) + "The End");
  await page.selectOption("#train-base", "lanternbay");
  await page.click("#train-run");
  await page.locator("#train-error").waitFor({ state: "visible" });
  assert.match(await page.textContent("#train-error .say"), /^The model has never seen the character "T"/);
  await page.click("#train-error summary");
  assert.match(await page.textContent("#train-error .api"), /at character 640 \(counting from 0\)/);
  await page.check("#train-lanternbay");
});

test("score a text: each character coloured by its surprise, the totals, the predictions at a character", async () => {
  await page.click("#tab-score");
  await page.selectOption("#model", "lanternbay");
  const text = "the lamp keeper walks the harbour wall at dusk. the fog rolls in.";
  await page.fill("#score-text", text);
  await page.fill("#score-stride", "0");
  await page.click("#score-run");
  await page.locator("#score-totals").waitFor({ state: "visible" });
  const r = await page.request.post(new URL("v1/score", pageURL).href, {
    headers: { Authorization: "Bearer " + process.env.MINIGPT_KEY },
    data: { model: "lanternbay", text },
  });
  const api = await r.json();
  assert.equal(await page.textContent("#score-bpc b"), api.summary.bits_per_char.toFixed(3));
  assert.equal(await page.textContent("#score-ppl b"), api.summary.perplexity.toFixed(3));
  assert.equal(await page.locator("#score-output .tok").count(), [...text].length - 1);
  // "harbour" is not Lantern Bay's: its 'h' after "the " surprises the
  // model more than the 'h' of "the".
  const bits = await page.$$eval("#score-output .tok", (s) => s.map((x) => Number(x.dataset.bits)));
  const at = (i) => bits[i - 1]; // tokens start at character 1
  assert.ok(at(text.indexOf("harbour")) > at(1), `'h' of harbour ${at(text.indexOf("harbour"))} bits, of the ${at(1)}`);
  await page.hover(`#score-output .tok[data-score="${text.indexOf("harbour") - 1}"]`);
  const title = await page.textContent("#score-title");
  const shown = Number(/: ([0-9.e-]+) bits of surprise/.exec(title)[1]);
  const want = api.tokens[text.indexOf("harbour") - 1].bits;
  assert.ok(Math.abs(shown - want) < 0.01, `the page reads ${shown} bits, the API ${want}`);
  assert.equal(await page.locator("#score-bars .bar-row").count(), 5);
  await page.screenshot({ path: join(shots, "playground-score.png"), fullPage: true });
  await page.click("#tab-generate");
});

test("generated text is inserted as text, never as HTML", { skip: !process.env.MINIGPT_HTML_MODEL }, async () => {
  await page.selectOption("#model", process.env.MINIGPT_HTML_MODEL);
  await page.fill("#prompt", "<img src=x onerror=alert(1)>");
  await page.fill("#max_tokens", "300");
  await setKnob("temperature", 1);
  let dialogs = 0;
  page.on("dialog", (d) => { dialogs++; d.dismiss(); });
  await generateAndWait();
  const text = await page.textContent("#output");
  assert.ok(text.includes("<"), "the model wrote no '<'");
  assert.equal(await page.locator("#output img, #output script, #output b").count(), 0);
  assert.equal(dialogs, 0);
  await page.selectOption("#model", "lanternbay");
});

test("the page loaded nothing from elsewhere and logged no errors", () => b.nothingElsewhere(assert));
