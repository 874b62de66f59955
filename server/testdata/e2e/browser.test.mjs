// Headless Chromium (Debian's, driven by playwright-core) on the
// playground: load the page, generate, inspect a character's
// distribution, stop a long generation, run the strategy comparison,
// and save screenshots.
//
// e2e.sh starts the server and sets MINIGPT_PAGE (the playground's URL),
// MINIGPT_KEY, MINIGPT_SHOTS (the folder for screenshots) and optionally
// MINIGPT_HTML_MODEL (a model whose vocabulary holds "<", ">" and quotes).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const pageURL = process.env.MINIGPT_PAGE;
const shots = process.env.MINIGPT_SHOTS;
if (!pageURL || !shots) throw new Error("set MINIGPT_PAGE and MINIGPT_SHOTS (see e2e.sh)");
const origin = new URL(pageURL).origin;

let context, page, profile;
const external = []; // requests to anything but the server
const consoleErrors = [];

before(async () => {
  profile = mkdtempSync(join(tmpdir(), "minigpt-chromium-"));
  // A fresh profile every run (playwright passes it as --user-data-dir).
  context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
    viewport: { width: 1360, height: 900 },
    deviceScaleFactor: 1,
  });
  page = context.pages()[0] || (await context.newPage());
  page.on("request", (r) => {
    if (!r.url().startsWith(origin)) external.push(r.url());
  });
  page.on("console", (m) => {
    if (m.type() === "error") consoleErrors.push(m.text());
  });
  page.on("pageerror", (e) => consoleErrors.push(String(e)));
  await page.goto(pageURL);
  // The API needs the key: the page asks for it after the first 401.
  await page.locator("#key-box").waitFor({ state: "visible" });
  await page.fill("#api-key", process.env.MINIGPT_KEY);
  await page.dispatchEvent("#api-key", "change");
  await page.waitForFunction(() => document.querySelectorAll("#model option").length > 0);
});

after(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

async function setKnob(name, value) {
  await page.fill(`#knob-${name}`, String(value));
  await page.dispatchEvent(`#knob-${name}`, "input");
}

async function generateAndWait() {
  await page.click("#generate");
  await page.waitForFunction(() => /characters in|Error|Stopped/.test(document.querySelector("#status").textContent), null, { timeout: 60_000 });
  return page.textContent("#status");
}

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

test("a character's distribution: raw vs final bars, chosen marked, cuts labelled", async () => {
  await setKnob("temperature", 1.2);
  await setKnob("top_k", 6);
  await setKnob("top_p", 0.8);
  await page.fill("#seed", "7");
  await page.fill("#max_tokens", "240");
  await generateAndWait();
  // Open a step where the model was unsure: the most candidates with a
  // non-zero raw probability above 1%.
  const i = await page.evaluate(() => {
    const spans = [...document.querySelectorAll("#output .tok")];
    let best = 0, bestP = 2;
    spans.forEach((s, j) => {
      const p = Number(/p = ([0-9.]+)/.exec(s.title)[1]);
      if (p < bestP) { bestP = p; best = j; }
    });
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
  await page.click("#inspector summary");
  await page.screenshot({ path: join(shots, "playground.png"), fullPage: true });
});

test("Stop aborts the request and the server stops generating", async () => {
  const metric = async () => {
    const r = await page.request.get(new URL("metrics", pageURL).href);
    return Number(/minigpt_generations_cancelled_total (\d+)/.exec(await r.text())[1]);
  };
  const before = await metric();
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
});

test("beam search from the num_beams knob", async () => {
  await page.click("#reset");
  await setKnob("num_beams", 4);
  await page.fill("#prompt", "a");
  await page.fill("#max_tokens", "40");
  await generateAndWait();
  const text = await page.$$eval("#output .tok", (spans) => spans.map((s) => s.textContent).join(""));
  // go run ./cmd/generate -beams 4 -n 40 -prompt a
  assert.equal("a" + text, "ats and writes the count in a book. the l");
  await page.click("#reset");
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

test("the page loaded nothing from elsewhere and logged no errors", () => {
  assert.deepEqual(external, []);
  // The 401 that made the page ask for the key is expected.
  assert.deepEqual(consoleErrors.filter((e) => !/401/.test(e)), []);
});
