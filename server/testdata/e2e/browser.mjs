// browser.mjs holds what the playground's browser tests share: the
// page's URL and the screenshot folder from e2e.sh, a fresh Chromium per
// test file, a watch on what a page loads and logs, and the helpers that
// drive the page.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

export const pageURL = process.env.MINIGPT_PAGE;
export const shots = process.env.MINIGPT_SHOTS;
if (!pageURL || !shots) throw new Error("set MINIGPT_PAGE and MINIGPT_SHOTS (see e2e.sh)");
export const origin = new URL(pageURL).origin;

export const external = []; // requests to anything but the page's server
export const consoleErrors = [];

// watch records what a page loads from elsewhere than its server (at
// from) and what it logs.
export function watch(p, from = origin) {
  p.on("request", (r) => {
    if (!r.url().startsWith(from)) external.push(r.url());
  });
  p.on("console", (m) => {
    if (m.type() === "error") consoleErrors.push(m.text());
  });
  p.on("pageerror", (e) => consoleErrors.push(String(e)));
}

// open loads the page and gives it the key, which it asks for after the
// first 401.
export async function open(p) {
  await p.goto(pageURL);
  await p.locator("#key-box").waitFor({ state: "visible" });
  await p.fill("#api-key", process.env.MINIGPT_KEY);
  await p.dispatchEvent("#api-key", "change");
  await p.waitForFunction(() => document.querySelectorAll("#model option").length > 0);
}

// launch starts Chromium with a fresh profile (playwright passes it as
// --user-data-dir) and opens the page at 1366×768 in it; close ends both.
export async function launch() {
  const profile = mkdtempSync(join(tmpdir(), "minigpt-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
    viewport: { width: 1366, height: 768 },
    deviceScaleFactor: 1,
  });
  const page = context.pages()[0] || (await context.newPage());
  watch(page);
  await open(page);
  const close = async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  };
  return { context, page, close };
}

// newPage opens the page in context at w×h.
export async function newPage(context, w, h) {
  const p = await context.newPage();
  watch(p);
  await p.setViewportSize({ width: w, height: h });
  await open(p);
  return p;
}

export async function setKnob(p, name, value) {
  await p.fill(`#knob-${name}`, String(value));
  await p.dispatchEvent(`#knob-${name}`, "input");
}

export async function generateAndWait(p) {
  await p.click("#generate");
  return waitGenerated(p);
}

export async function waitGenerated(p) {
  await p.waitForFunction(() => /characters in|Stopped/.test(document.querySelector("#status").textContent) || !document.querySelector("#gen-error").hidden, null, { timeout: 60_000 });
  return p.textContent("#status");
}

// allFive waits until the comparison's five cards are written.
export async function allFive(p) {
  await p.waitForFunction(() => document.querySelectorAll("#compare .card").length === 5 &&
    [...document.querySelectorAll("#compare .card .meta")].every((m) => !/generating/.test(m.textContent)), null, { timeout: 60_000 });
}

// nothingElsewhere checks, at the end of a file's tests, that the pages
// loaded nothing from elsewhere and logged no errors but the expected
// ones: the 401 that made each page ask for the key, and the 400s the
// tests provoke on purpose.
export function nothingElsewhere(assert) {
  assert.deepEqual(external, []);
  assert.deepEqual(consoleErrors.filter((e) => !/status of (401|400)/.test(e)), []);
}
