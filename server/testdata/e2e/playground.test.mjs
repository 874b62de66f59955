// More of the playground in headless Chromium (browser.test.mjs has the
// rest): on Compare, the Generate button and Ctrl+Enter run the
// comparison, the controls it ignores hidden and those it uses labelled,
// at 1366×768 and 390×844; both shipped models listed, and an unknown
// character named by character, line and column; the loss chart drawn at
// its box's width with tick labels at least 11 px tall, and the attention
// strips opened at their newest characters, on a phone; a model trained
// on a server without -train-dir said to live in memory only, and
// removed. It saves screenshots of those views.
//
// e2e.sh sets what browser.test.mjs gets, and MINIGPT_PAGE_MEMORY: a
// second server's playground (-training, no -train-dir, no key).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import * as b from "./browser.mjs";

const { shots, watch } = b;
let context, page, closeBrowser;

before(async () => {
  ({ context, page, close: closeBrowser } = await b.launch());
});

after(async () => {
  await closeBrowser?.();
});

const generateAndWait = (p = page) => b.generateAndWait(p);

test("compare: the Generate button and Ctrl+Enter run the comparison; the controls it ignores are hidden, those it uses labelled", async () => {
  await page.selectOption("#model", "lanternbay");
  await page.fill("#prompt", "the ");
  await page.fill("#seed", "42");
  const before = await page.textContent("#output");
  await page.click("#tab-compare");
  for (const sel of ["#knob-panel", "#max-tokens-row", "#stop-row", "#bias-row", "#stop-button", "#reset"]) {
    assert.ok(await page.isHidden(sel), `${sel} is shown on Compare, which ignores it`);
  }
  assert.ok(await page.isVisible("#prompt") && await page.isVisible("#seed"));
  assert.match(await page.textContent("#compare-note"), /five decoding settings on this prompt, all with this seed/);
  assert.match(await page.textContent('label[for="seed"]'), /^seed \(all 5\)$/);
  assert.match(await page.textContent("#generate"), /^Run comparison\s*(Ctrl|⌘)\+Enter$/);
  const done = () => b.allFive(page);
  await page.fill("#compare-tokens", "400");
  await page.$eval("#compare", (c) => c.replaceChildren());
  await page.click("#generate");
  await done();
  assert.equal(await page.getAttribute('#compare .card[data-strategy="greedy"]', "data-loop"), "105");
  await page.$eval("#compare", (c) => c.replaceChildren());
  await page.press("#prompt", "Control+Enter");
  await done();
  assert.equal(await page.getAttribute('#compare .card[data-strategy="greedy"]', "data-loop"), "105");
  // The Generate pane, hidden, was not written to.
  assert.equal(await page.textContent("#output"), before);
  await page.click("#tab-generate");
  assert.match(await page.textContent("#generate"), /^Generate\s*(Ctrl|⌘)\+Enter$/);
  assert.ok(await page.isVisible("#knob-panel") && await page.isVisible("#max-tokens-row"));
});

test("at 390×844, Compare in view: the button runs it, the cards stack", async () => {
  const p = await b.newPage(context, 390, 844);
  await p.selectOption("#model", "lanternbay");
  await p.click("#tab-compare");
  await p.fill("#compare-tokens", "200");
  const box = await p.locator("#generate").boundingBox();
  assert.ok(box && box.y + box.height <= 844, "the Run comparison button is below the fold");
  await p.click("#generate");
  await b.allFive(p);
  await p.screenshot({ path: join(shots, "playground-compare-phone.png") });
  await p.close();
});

test("the shipped models are both listed, and a prompt's unknown character is named by character, line and column", async () => {
  const ids = await page.$$eval("#model option", (os) => os.map((o) => o.value));
  assert.ok(ids.includes("lanternbay") && ids.includes("shakespeare"), `the model menu holds ${ids}`);
  await page.selectOption("#model", "shakespeare");
  await page.fill("#prompt", "ROMEO:\nO <love");
  await page.dispatchEvent("#prompt", "input");
  assert.match(await page.textContent("#prompt-error"), /^The model has never seen "<" \(at character 9 \(counting from 0\), line 2, column 3\): it knows only /);
  await page.selectOption("#model", "lanternbay");
  await page.fill("#prompt", "the Keeper");
  await page.dispatchEvent("#prompt", "input");
  assert.match(await page.textContent("#prompt-error"), /^The model has never seen "K" \(at character 4 \(counting from 0\)\): /);
  await page.fill("#prompt", "the ");
  await page.dispatchEvent("#prompt", "input");
});


// (browser.test.mjs saves the laptop's view of the chart, trained.)
for (const [w, h, shot] of [[1366, 768, null], [390, 844, "playground-train-phone.png"]]) {
  test(`at ${w}×${h}: the loss chart is drawn at its box's width, its tick labels at least 11 px tall`, async () => {
    const p = await b.newPage(context, w, h);
    await p.click("#tab-train");
    const m = await p.evaluate(() => {
      const svg = document.querySelector("#train-curve"), box = document.querySelector("#train-curve-box");
      const ticks = [...svg.querySelectorAll("text.tick")].map((t) => t.getBoundingClientRect());
      return {
        box: box.clientWidth, svg: svg.getBoundingClientRect().width, viewBox: svg.viewBox.baseVal.width,
        heights: ticks.map((r) => r.height), right: Math.max(...ticks.map((r) => r.right)), svgRight: svg.getBoundingClientRect().right,
        fontSize: parseFloat(getComputedStyle(svg.querySelector("text.tick")).fontSize),
      };
    });
    assert.ok(Math.abs(m.svg - Math.min(m.box, 760)) <= 1, `the chart is ${m.svg} px wide in a box of ${m.box}`);
    assert.ok(Math.abs(m.viewBox - m.svg) <= 1, `drawn ${m.viewBox} units wide at ${m.svg} px: scaled`);
    assert.ok(m.fontSize >= 11 && Math.min(...m.heights) >= 11, `tick labels ${m.fontSize} px, ${Math.min(...m.heights)} px tall`);
    assert.ok(m.right <= m.svgRight + 0.5, "a tick label runs off the chart");
    if (shot) await p.screenshot({ path: join(shots, shot), fullPage: true });
    await p.close();
  });
}

test("at 390×844, the attention strips start at the newest characters", async () => {
  const p = await b.newPage(context, 390, 844);
  // Shakespeare's context is 64 characters: a strip far wider than a phone.
  await p.selectOption("#model", "shakespeare");
  await p.fill("#prompt", "ROMEO:");
  await p.fill("#max_tokens", "90");
  await p.fill("#seed", "42");
  await generateAndWait(p);
  await p.click('#output .tok[data-step="80"]');
  await p.locator("#attn-grid .attn-head").first().waitFor();
  const strips = await p.$$eval("#attn-grid .strip", (ss) => ss.map((s) => {
    const last = s.lastElementChild.getBoundingClientRect(), box = s.getBoundingClientRect();
    return { scroll: s.scrollLeft, client: s.clientWidth, width: s.scrollWidth, lastRight: last.right, boxRight: box.right, cells: s.children.length };
  }));
  assert.equal(strips.length, 16); // 4 layers × 4 heads
  for (const st of strips) {
    assert.equal(st.cells, 64);
    assert.ok(st.width > st.client, `the strip fits (${st.width} in ${st.client}): the case is not tested`);
    assert.ok(st.scroll + st.client >= st.width - 1, `scrolled to ${st.scroll} of ${st.width - st.client}: the newest characters are hidden`);
    assert.ok(st.lastRight <= st.boxRight + 0.5, "the newest character is off the strip's right edge");
  }
  assert.match(await p.textContent("#attention-sub"), /the newest at the right/);
  await p.locator("#inspector").screenshot({ path: join(shots, "playground-attention-phone.png") });
  await p.close();
});


test("a model trained on a server without -train-dir is said to live in memory only, and can be removed", { skip: !process.env.MINIGPT_PAGE_MEMORY }, async () => {
  const p = await context.newPage();
  watch(p, new URL(process.env.MINIGPT_PAGE_MEMORY).origin);
  await p.goto(process.env.MINIGPT_PAGE_MEMORY);
  await p.waitForFunction(() => document.querySelectorAll("#model option").length > 0);
  await p.click("#tab-train");
  await p.waitForFunction(() => !document.querySelector("#train-run").disabled);
  await p.check("#train-lanternbay");
  await p.selectOption("#train-base", "scratch");
  await p.fill("#train-steps", "20");
  await p.click("#train-run");
  await p.waitForFunction(() => /^Done/.test(document.querySelector("#train-status").textContent) || !document.querySelector("#train-error").hidden, null, { timeout: 120_000 });
  assert.match(await p.textContent("#train-status"), /^Done: 20 steps\. The new model is (ft:scratch:playground:[0-9a-f]{8}), kept in the server's memory only \(serve -train-dir saves models as files\)\.$/);
  const name = /(ft:scratch:playground:[0-9a-f]{8})/.exec(await p.textContent("#train-status"))[1];
  const row = p.locator(`#tuned-list li[data-model="${name}"]`);
  await row.waitFor();
  assert.match(await row.textContent(), /in the server's memory only: gone when it stops/);
  assert.match(await p.textContent("#tuned-where"), /-train-dir DIR/);
  await row.locator("button.remove").click();
  await row.waitFor({ state: "detached" });
  assert.ok(await p.isHidden("#tuned"), "the list stays with no model in it");
  assert.ok(!(await p.$$eval("#model option", (os) => os.map((o) => o.value))).includes(name));
  await p.close();
});


test("the pages loaded nothing from elsewhere and logged no errors", () => b.nothingElsewhere(assert));
