// The official openai npm package sends output formats to cmd/serve:
// vLLM's guided_regex and guided_choice and OpenAI's response_format (the
// regex extension, json_schema through the SDK's own zod helper, and
// json_object), and gets text that JavaScript's RegExp, JSON.parse and
// zod accept. JSON needs a model that writes braces: the test trains one
// from scratch on JSON lines through the fine-tuning API.
//
// e2e.sh starts the server (with -training) and sets MINIGPT_URL (the /v1
// base URL) and MINIGPT_KEY (the API key it was started with). Run by
// hand:
//
//	go run ./cmd/serve -addr 127.0.0.1:8080 -api-key k -training &
//	MINIGPT_URL=http://127.0.0.1:8080/v1 MINIGPT_KEY=k node --test guided.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI, { toFile } from "openai";
import { zodResponseFormat } from "openai/helpers/zod";
import { z } from "zod";

const baseURL = process.env.MINIGPT_URL;
const apiKey = process.env.MINIGPT_KEY;
if (!baseURL || !apiKey) throw new Error("set MINIGPT_URL and MINIGPT_KEY (see e2e.sh)");

const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 120_000 });
const model = "lanternbay";
const sentence = "the (lamp|boat|keeper) (glows|drifts|walks)\\.";
const whole = (pattern) => new RegExp(`^(?:${pattern})$`);

test("guided_regex: every sample matches, on both routes, whole and streamed", async () => {
  const re = whole(sentence);
  // The SDK sends fields it has no type for as they are.
  const r = await client.completions.create({ model, prompt: "the ", max_tokens: 40, n: 4, seed: 3, temperature: 1.5, guided_regex: sentence });
  assert.equal(r.choices.length, 4);
  for (const c of r.choices) {
    assert.match(c.text, re);
    assert.equal(c.finish_reason, "stop");
    assert.equal(c.format_incomplete, undefined);
  }
  const chat = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "the " }], max_completion_tokens: 40, n: 3, seed: 4, guided_regex: sentence,
  });
  for (const c of chat.choices) {
    assert.match(c.message.content, re);
    assert.equal(c.finish_reason, "stop");
  }
  const stream = await client.completions.create({ model, prompt: "the ", max_tokens: 40, seed: 3, temperature: 1.5, guided_regex: sentence, stream: true });
  let text = "", finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      text += c.text;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(text, r.choices[0].text);
  assert.equal(finish, "stop");
  // The request options' body is the SDK's other way: it replaces the body.
  const viaOptions = await client.completions.create(
    { model, prompt: "unused" },
    { body: { model, prompt: "the ", max_tokens: 40, n: 4, seed: 3, temperature: 1.5, guided_regex: sentence } },
  );
  assert.deepEqual(viaOptions.choices.map((c) => c.text), r.choices.map((c) => c.text));
});

test("guided_choice, and response_format's regex extension with beams", async () => {
  const choices = ["yes", "no", "the lamp glows"];
  const r = await client.completions.create({ model, prompt: "the ", max_tokens: 20, n: 5, seed: 8, temperature: 2, guided_choice: choices });
  for (const c of r.choices) assert.ok(choices.includes(c.text), `${JSON.stringify(c.text)} is not a choice`);
  const pattern = "[a-z]{2,6}( [a-z]{2,6}){1,3}\\.";
  const beams = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "the keeper " }], max_tokens: 40, num_beams: 4, n: 3,
    response_format: { type: "regex", regex: pattern },
  });
  assert.equal(beams.choices.length, 3);
  for (const c of beams.choices) assert.match(c.message.content, whole(pattern));
});

test("format_incomplete: a stop string that cuts the format short", async () => {
  const r = await client.completions.create({ model, prompt: "the ", max_tokens: 40, guided_regex: sentence, stop: ["the "] });
  assert.equal(r.choices[0].text, "");
  assert.equal(r.choices[0].finish_reason, "stop");
  assert.equal(r.choices[0].format_incomplete, true);
});

test("a malformed, unsatisfiable or second format: the SDK's BadRequestError naming the field", async () => {
  await assert.rejects(
    client.completions.create({ model, prompt: "the ", guided_regex: "the [lamp" }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "guided_regex" && e.code === "invalid_format" && /at character 4/.test(e.message),
  );
  await assert.rejects(
    client.chat.completions.create({ model, messages: [{ role: "user", content: "the " }], response_format: { type: "json_object" } }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "response_format" && e.code === "unsatisfiable_format" && /needs '\{' and '\}', which the model never writes/.test(e.message),
  );
  await assert.rejects(
    client.completions.create({ model, prompt: "the ", guided_choice: ["a"], response_format: { type: "regex", regex: "a" } }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "response_format" && e.code === "conflicting_formats" && /guided_choice and response_format/.test(e.message),
  );
});

// jsonLines is a text of JSON records after a first line that is not
// one (the files API would read a first line of JSON as legacy JSONL).
function jsonLines() {
  const names = ["ab", "keeper", "lamp", "tide", "gull", "boat", "bay"];
  const lines = ["records"];
  for (let i = 0; i < 200; i++) {
    const tags = [["ab"], ["ba"], [], ["ab", "ba"]][i % 4];
    lines.push(JSON.stringify({ name: names[(i * 5) % names.length], ok: i % 3 === 0, tags, n: (i * 37) % 1000 }));
  }
  return lines.join("\n") + "\n";
}

test("response_format json_schema (the SDK's zod helper) and json_object, on a model trained on JSON lines", async () => {
  const file = await client.files.create({ file: await toFile(Buffer.from(jsonLines()), "records.txt"), purpose: "fine-tune" });
  const created = await client.fineTuning.jobs.create({ model: "scratch", training_file: file.id, seed: 2, suffix: "records", hyperparameters: { steps: 40, batch_size: 4 } });
  let job = created;
  for (let i = 0; i < 2400 && !["succeeded", "failed", "cancelled"].includes(job.status); i++) {
    await new Promise((r) => setTimeout(r, 50));
    job = await client.fineTuning.jobs.retrieve(created.id);
  }
  assert.equal(job.status, "succeeded", JSON.stringify(job.error));
  const tuned = job.fine_tuned_model;
  try {
    // A number with bounds (zod writes minimum and maximum), held to them.
    const Record = z.object({ name: z.string().max(8), ok: z.boolean(), tags: z.array(z.enum(["ab", "ba"])).max(3), score: z.number().min(0).max(1) });
    const parsed = await client.chat.completions.parse({
      model: tuned, messages: [{ role: "user", content: "\n" }], max_tokens: 120, n: 3, seed: 6, temperature: 1.2,
      response_format: zodResponseFormat(Record, "record"),
    });
    for (const c of parsed.choices) {
      assert.equal(c.finish_reason, "stop");
      // parse has run zod over the text; check it once more by hand.
      const v = JSON.parse(c.message.content);
      assert.deepEqual(Object.keys(v), ["name", "ok", "tags", "score"], c.message.content);
      assert.ok(typeof v.score === "number" && v.score >= 0 && v.score <= 1, c.message.content);
      assert.deepEqual(c.message.parsed, v);
      assert.ok(typeof v.name === "string" && [...v.name].length <= 8 && typeof v.ok === "boolean");
      assert.ok(v.tags.length <= 3 && v.tags.every((t) => t === "ab" || t === "ba"), c.message.content);
    }
    const schema = { type: "object", properties: { n: { type: "integer" }, name: { enum: ["ab", "tide"] } }, required: ["n", "name"] };
    const r = await client.completions.create({
      model: tuned, prompt: "\n", max_tokens: 60, n: 4, seed: 7,
      response_format: { type: "json_schema", json_schema: { name: "n", schema, strict: true } },
    });
    for (const c of r.choices) {
      const v = JSON.parse(c.text);
      assert.ok(Number.isInteger(v.n) && ["ab", "tide"].includes(v.name), c.text);
    }
    const any = await client.completions.create({ model: tuned, prompt: "\n", max_tokens: 80, n: 4, seed: 9, response_format: { type: "json_object" } });
    for (const c of any.choices) {
      const v = JSON.parse(c.text);
      assert.ok(typeof v === "object" && v !== null && !Array.isArray(v), c.text);
    }
  } finally {
    await client.models.delete(tuned);
    await client.files.delete(file.id);
  }
});
