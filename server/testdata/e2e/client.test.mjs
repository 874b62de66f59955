// The official openai npm package as a real client of cmd/serve:
// completions, models, and with -training the files and fine-tuning API.
//
// e2e.sh starts the server (with -training) and sets MINIGPT_URL (the /v1
// base URL) and MINIGPT_KEY (the API key it was started with). Run by
// hand:
//
//	go run ./cmd/serve -addr 127.0.0.1:8080 -api-key k -training &
//	MINIGPT_URL=http://127.0.0.1:8080/v1 MINIGPT_KEY=k node --test client.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI, { toFile } from "openai";

const baseURL = process.env.MINIGPT_URL;
const apiKey = process.env.MINIGPT_KEY;
if (!baseURL || !apiKey) throw new Error("set MINIGPT_URL and MINIGPT_KEY (see e2e.sh)");

// No retries: a 429 or 5xx must show, not be papered over.
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });
const model = "lanternbay";

// Pinned from real runs of cmd/generate (prompt included):
//   go run ./cmd/generate -greedy -n 40                    -> GREEDY
//   go run ./cmd/generate -temperature 0.8 -seed 42 -n 60  -> SEEDED
const GREEDY = "the boats come home when the lantern glows. ";
const SEEDED = "the boats and writes the count in a book. the lantern burns all ";

test("completion: the OpenAI response shape, greedy text equal to cmd/generate's", async () => {
  const r = await client.completions.create({ model, prompt: "the ", max_tokens: 40, temperature: 0 });
  assert.equal(r.object, "text_completion");
  assert.equal(r.model, model);
  assert.match(r.id, /^cmpl-/);
  assert.equal(r.choices.length, 1);
  assert.equal("the " + r.choices[0].text, GREEDY);
  assert.equal(r.choices[0].finish_reason, "length");
  assert.deepEqual(r.usage, { prompt_tokens: 4, completion_tokens: 40, total_tokens: 44 });
  assert.match(r.system_fingerprint, /^fp_[0-9a-f]{16}$/);
});

test("seed: the same text as cmd/generate -seed, and a chosen seed reproduces", async () => {
  const r = await client.completions.create({ model, prompt: "the ", max_tokens: 60, temperature: 0.8, seed: 42 });
  assert.equal("the " + r.choices[0].text, SEEDED);
  assert.equal(r.seed, 42);

  // Without a seed the server picks one and returns it (body and header).
  const { data, response } = await client.completions
    .create({ model, prompt: "the ", max_tokens: 50, temperature: 1.4 })
    .withResponse();
  assert.ok(Number.isSafeInteger(data.seed), `seed ${data.seed} is not exact in JavaScript`);
  assert.equal(response.headers.get("minigpt-seed"), String(data.seed));
  const again = await client.completions.create({ model, prompt: "the ", max_tokens: 50, temperature: 1.4, seed: data.seed });
  assert.equal(again.choices[0].text, data.choices[0].text);
});

test("streaming: chunks concatenate to the non-streamed text", async () => {
  const params = { model, prompt: "the keeper ", max_tokens: 50, temperature: 1.1, seed: 7 };
  const whole = await client.completions.create(params);
  const stream = await client.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let text = "", finish = null, chunks = 0, usage = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, "text_completion");
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.text;
      if (c.finish_reason) finish = c.finish_reason;
    }
    chunks++;
  }
  assert.equal(text, whole.choices[0].text);
  assert.equal(finish, "length");
  assert.ok(chunks >= 50, `only ${chunks} chunks for 50 characters`);
  assert.deepEqual(usage, whole.usage);
});

test("stream can be aborted by the client", async () => {
  const stream = await client.completions.create({ model, prompt: "the ", max_tokens: 4000, stream: true });
  let n = 0;
  for await (const chunk of stream) {
    n += chunk.choices.length;
    if (n >= 5) break; // breaking out aborts the request
  }
  assert.equal(n, 5);
});

test("logprobs: tokens, token_logprobs, top_logprobs, text_offset", async () => {
  const r = await client.completions.create({ model, prompt: "the ", max_tokens: 30, temperature: 0, logprobs: 3 });
  const lp = r.choices[0].logprobs;
  const text = r.choices[0].text;
  assert.equal(lp.tokens.join(""), text);
  assert.equal(lp.token_logprobs.length, 30);
  assert.equal(lp.top_logprobs.length, 30);
  for (let i = 0; i < 30; i++) {
    assert.ok(lp.token_logprobs[i] <= 0);
    const top = Object.entries(lp.top_logprobs[i]);
    assert.ok(top.length >= 3 && top.length <= 4, `step ${i}: ${top.length} alternatives`);
    // Greedy takes the most likely character: the first alternative.
    const best = top.reduce((a, b) => (b[1] > a[1] ? b : a));
    assert.equal(best[0], lp.tokens[i], `step ${i}: greedy chose ${lp.tokens[i]}, most likely is ${best[0]}`);
    assert.equal(lp.text_offset[i], i);
    // The probabilities of the alternatives are a part of one distribution.
    assert.ok(top.reduce((s, [, l]) => s + Math.exp(l), 0) <= 1 + 1e-9);
  }
});

test("stop: the text ends before the stop string", async () => {
  const r = await client.completions.create({ model, prompt: "the ", max_tokens: 40, temperature: 0, stop: ["lantern", "zzz"] });
  assert.equal("the " + r.choices[0].text, "the boats come home when the ");
  assert.equal(r.choices[0].finish_reason, "stop");
  const s = await client.completions.create({ model, prompt: "the ", max_tokens: 40, temperature: 0, stop: "lantern", stream: true });
  let text = "";
  for await (const c of s) text += c.choices.map((x) => x.text).join("");
  assert.equal(text, r.choices[0].text);
});

test("n and an array of prompts", async () => {
  const r = await client.completions.create({ model, prompt: ["the ", "a small "], n: 2, max_tokens: 20, seed: 3 });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2, 3]);
  // Sample 0 of each prompt is what a single request with that seed gives.
  const one = await client.completions.create({ model, prompt: "a small ", max_tokens: 20, seed: 3 });
  assert.equal(r.choices[2].text, one.choices[0].text);
});

test("extension fields, sent as the SDK's undocumented body params", async () => {
  // The SDK sends parameters it has no type for as they are.
  const base = { model, prompt: "the ", max_tokens: 60, seed: 11, temperature: 1.3 };
  const plain = await client.completions.create(base);
  const k1 = await client.completions.create({ ...base, top_k: 1 });
  const greedy = await client.completions.create({ ...base, temperature: 0 });
  // top_k 1 keeps only the most likely character: greedy.
  assert.equal(k1.choices[0].text, greedy.choices[0].text);
  assert.notEqual(plain.choices[0].text, greedy.choices[0].text);
  const r = await client.completions.create({ ...base, min_p: 0.2, repetition_penalty: 1.2, no_repeat_ngram_size: 6 });
  assert.equal(r.choices[0].text.length, 60);
  // no_repeat_ngram_size 6: no 6-character string occurs twice in prompt + text.
  const full = "the " + r.choices[0].text;
  const seen = new Set();
  for (let i = 0; i + 6 <= full.length; i++) {
    const g = full.slice(i, i + 6);
    assert.ok(!seen.has(g), `6-gram ${JSON.stringify(g)} repeats in ${JSON.stringify(full)}`);
    seen.add(g);
  }
  // An unknown field is refused, not ignored.
  await assert.rejects(client.completions.create({ ...base, top_kk: 3 }), (e) => e instanceof OpenAI.BadRequestError && e.param === "top_kk");
});

test("errors: the SDK raises its own classes for 400, 401 and 404", async () => {
  await assert.rejects(
    client.completions.create({ model, prompt: "the ", temperature: -1 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === "temperature" && /temperature -1/.test(e.message),
  );
  await assert.rejects(
    client.completions.create({ model, prompt: "The Keeper" }),
    (e) => e instanceof OpenAI.BadRequestError && e.code === "unknown_character" && /'T' \(U\+0054\) at character 0 \(counting from 0\)/.test(e.message),
  );
  await assert.rejects(
    client.completions.create({ model, prompt: "the ", suffix: "x" }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "suffix",
  );
  await assert.rejects(
    client.chat.completions.create({ model, messages: [{ role: "user", content: "Hi" }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.code === "unknown_character" && /'H' \(U\+0048\) at character index 0/.test(e.message),
  );
  const wrongKey = new OpenAI({ baseURL, apiKey: "wrong", maxRetries: 0 });
  await assert.rejects(
    wrongKey.completions.create({ model, prompt: "the " }),
    (e) => e instanceof OpenAI.AuthenticationError && e.status === 401,
  );
  await assert.rejects(
    client.completions.create({ model: "gpt-4", prompt: "the " }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404 && e.code === "model_not_found",
  );
});

// The default chat template concatenates the messages' contents: the
// reply continues "the ", as cmd/generate does (SEEDED, GREEDY).
test("chat.completions.create: the chat.completion shape, the reply cmd/generate writes after the messages' contents", async () => {
  const r = await client.chat.completions.create({
    model, messages: [{ role: "system", content: "th" }, { role: "user", content: "e " }],
    max_completion_tokens: 60, temperature: 0.8, seed: 42,
  });
  assert.equal(r.object, "chat.completion");
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, "assistant");
  assert.equal("the " + r.choices[0].message.content, SEEDED);
  assert.equal(r.choices[0].finish_reason, "length");
  assert.deepEqual(r.usage, { prompt_tokens: 4, completion_tokens: 60, total_tokens: 64 });

  const g = await client.chat.completions.create({ model, messages: [{ role: "user", content: "the " }], max_tokens: 40, temperature: 0 });
  assert.equal("the " + g.choices[0].message.content, GREEDY);
  const stop = await client.chat.completions.create({ model, messages: [{ role: "user", content: "the " }], max_tokens: 40, temperature: 0, stop: ["lantern"] });
  assert.equal(stop.choices[0].message.content, "boats come home when the ");
  assert.equal(stop.choices[0].finish_reason, "stop");
});

test("chat.completions.create: streaming, n, and logprobs in the chat format", async () => {
  const params = { model, messages: [{ role: "user", content: "the keeper " }], max_tokens: 50, temperature: 1.1, seed: 7, n: 2 };
  const whole = await client.chat.completions.create(params);
  const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  const text = ["", ""], finish = [null, null];
  let usage = null, roles = 0;
  for await (const chunk of stream) {
    assert.equal(chunk.object, "chat.completion.chunk");
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta.role) roles++;
      text[c.index] += c.delta.content ?? "";
      if (c.finish_reason) finish[c.index] = c.finish_reason;
    }
  }
  assert.deepEqual(text, whole.choices.map((c) => c.message.content));
  assert.deepEqual(finish, ["length", "length"]);
  assert.equal(roles, 2);
  assert.deepEqual(usage, whole.usage);
  // The SDK's own stream helper puts the message together.
  const helper = client.chat.completions.stream({ ...params, n: 1 });
  const done = await helper.finalChatCompletion();
  assert.equal(done.choices[0].message.content, whole.choices[0].message.content);

  const lp = await client.chat.completions.create({ model, messages: [{ role: "user", content: "the " }], max_tokens: 20, temperature: 0, logprobs: true, top_logprobs: 3 });
  const content = lp.choices[0].logprobs.content;
  assert.equal(content.map((e) => e.token).join(""), lp.choices[0].message.content);
  for (const e of content) {
    assert.ok(e.logprob <= 0);
    assert.deepEqual(e.bytes, [...Buffer.from(e.token)]);
    assert.equal(e.top_logprobs.length, 3);
    // Greedy takes the most likely character.
    assert.equal(e.top_logprobs[0].token, e.token);
  }
});

test("chat.completions.create: tools, images and audio are refused by name", async () => {
  const messages = [{ role: "user", content: "the " }];
  await assert.rejects(
    client.chat.completions.create({ model, messages, tools: [{ type: "function", function: { name: "f", parameters: {} } }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "tools",
  );
  await assert.rejects(
    client.chat.completions.create({ model, messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64," } }] }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "messages[0].content[0]" && /images are not supported/.test(e.message),
  );
  await assert.rejects(
    client.chat.completions.create({ model, messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "", format: "wav" } }] }] }),
    (e) => e instanceof OpenAI.BadRequestError && /audio is not supported/.test(e.message),
  );
  await assert.rejects(
    client.chat.completions.create({ model, messages, modalities: ["text", "audio"], audio: { voice: "alloy", format: "wav" } }),
    (e) => e instanceof OpenAI.BadRequestError && (e.param === "audio" || e.param === "modalities"),
  );
});

test("models: list and retrieve", async () => {
  const list = [];
  for await (const m of client.models.list()) list.push(m.id);
  assert.ok(list.includes(model));
  const m = await client.models.retrieve(model);
  assert.equal(m.id, model);
  assert.equal(m.object, "model");
  await assert.rejects(client.models.retrieve("nope"), (e) => e instanceof OpenAI.NotFoundError);
});

// waitFor polls a job until its status is one of want.
async function waitFor(id, ...want) {
  for (let i = 0; i < 1200; i++) {
    const job = await client.fineTuning.jobs.retrieve(id);
    if (want.includes(job.status)) return job;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`job ${id} never reached ${want}`);
}

test("fine-tuning: files.create, fineTuning.jobs.create/retrieve/list/listEvents, completions on the new model", async () => {
  const text = "the gulls sleep on the harbour wall. the keeper counts them at dawn. ".repeat(12);
  const file = await client.files.create({ file: await toFile(Buffer.from(text), "gulls.txt"), purpose: "fine-tune" });
  assert.equal(file.object, "file");
  assert.equal(file.purpose, "fine-tune");
  assert.equal(file.filename, "gulls.txt");
  assert.equal(file.bytes, text.length);
  assert.match(file.id, /^file-[0-9a-f]{24}$/);
  assert.equal((await client.files.retrieve(file.id)).id, file.id);
  assert.equal(await (await client.files.content(file.id)).text(), text);

  const created = await client.fineTuning.jobs.create({
    model: model, training_file: file.id, seed: 5, suffix: "gulls",
    hyperparameters: { n_epochs: 1, batch_size: 4, learning_rate_multiplier: 1 },
  });
  assert.equal(created.object, "fine_tuning.job");
  assert.equal(created.seed, 5);
  assert.equal(created.model, model);
  assert.ok(["queued", "running"].includes(created.status), created.status);
  // One epoch of the 90% that trains (745 characters) in windows of 4 × 32.
  assert.equal(created.hyperparameters.n_epochs, 1);
  assert.equal(created.hyperparameters.steps, 6);

  const job = await waitFor(created.id, "succeeded", "failed", "cancelled");
  assert.equal(job.status, "succeeded", JSON.stringify(job.error));
  assert.match(job.fine_tuned_model, /^ft:lanternbay:gulls:[0-9a-f]{8}$/);
  assert.equal(job.trained_tokens, 6 * 4 * 32);
  assert.ok(job.finished_at >= job.created_at);

  const ids = [];
  for await (const j of client.fineTuning.jobs.list({ limit: 2 })) ids.push(j.id);
  assert.ok(ids.includes(job.id), `${job.id} not in ${ids}`);

  // Every event, through the SDK's cursor pages (newest first).
  const events = [];
  for await (const e of client.fineTuning.jobs.listEvents(job.id, { limit: 3 })) events.push(e);
  assert.equal(events[0].message, "The job has successfully completed");
  assert.equal(events.at(-1).message, `Created fine-tuning job: ${job.id}`);
  const metrics = events.filter((e) => e.type === "metrics").reverse();
  assert.deepEqual(metrics.map((e) => e.data.step), [1, 2, 3, 4, 5, 6]);
  assert.ok(metrics.every((e) => e.data.train_loss > 0 && e.data.total_steps === 6));
  assert.equal(new Set(events.map((e) => e.id)).size, events.length, "an event listed twice");

  // The model is served at once.
  const listed = [];
  for await (const m of client.models.list()) listed.push(m.id);
  assert.ok(listed.includes(job.fine_tuned_model));
  const r = await client.completions.create({ model: job.fine_tuned_model, prompt: "the gulls ", max_tokens: 30, temperature: 0 });
  assert.equal(r.model, job.fine_tuned_model);
  assert.equal(r.choices[0].text.length, 30);
  // It learned: the text it was tuned on is likelier under it.
  const before = await client.completions.create({ model, prompt: text.slice(0, 200), max_tokens: 0, echo: true, logprobs: 0 });
  const after = await client.completions.create({ model: job.fine_tuned_model, prompt: text.slice(0, 200), max_tokens: 0, echo: true, logprobs: 0 });
  const sum = (c) => c.choices[0].logprobs.token_logprobs.slice(1).reduce((a, b) => a + b, 0);
  assert.ok(sum(after) > sum(before), `log-likelihood ${sum(before)} before, ${sum(after)} after`);

  // The same settings and seed give the same model: its fingerprint.
  const again = await waitFor((await client.fineTuning.jobs.create({
    model, training_file: file.id, seed: 5, hyperparameters: { n_epochs: 1, batch_size: 4 },
  })).id, "succeeded");
  const fp = async (id) => (await client.models.retrieve(id)).system_fingerprint;
  assert.equal(await fp(again.fine_tuned_model), await fp(job.fine_tuned_model));
  assert.equal((await client.models.delete(again.fine_tuned_model)).deleted, true);
  assert.equal((await client.files.delete(file.id)).deleted, true);
});

test("fine-tuning: cancel, and the errors the SDK raises", async () => {
  // steps is an extension: the SDK sends it as it is.
  const created = await client.fineTuning.jobs.create({ model: "scratch", training_file: "file-lanternbay", hyperparameters: { steps: 5000, batch_size: 4 } });
  await waitFor(created.id, "running");
  const cancelled = await client.fineTuning.jobs.cancel(created.id);
  assert.equal(cancelled.status, "cancelled");
  assert.equal(cancelled.fine_tuned_model, null);
  assert.ok(cancelled.step < 5000);

  await assert.rejects(
    client.fineTuning.jobs.create({ model, training_file: "file-lanternbay", hyperparameters: { batch_size: 0 } }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "hyperparameters.batch_size",
  );
  const upper = await client.files.create({ file: await toFile(Buffer.from("the lamp keeper walks. ".repeat(20) + "The End"), "upper.txt"), purpose: "fine-tune" });
  await assert.rejects(
    client.fineTuning.jobs.create({ model, training_file: upper.id }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "training_file" && e.code === "unknown_character" && /'T' \(U\+0054\) at character 460 \(counting from 0\)/.test(e.message),
  );
  await assert.rejects(client.fineTuning.jobs.retrieve("ftjob-nope"), (e) => e instanceof OpenAI.NotFoundError);
  await assert.rejects(
    client.fineTuning.jobs.create({ model: "gpt-4o-mini", training_file: "file-lanternbay" }),
    (e) => e instanceof OpenAI.NotFoundError && e.param === "model",
  );
  await assert.rejects(
    client.files.create({ file: await toFile(Buffer.from("x"), "x.txt"), purpose: "assistants" }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "purpose",
  );
  await client.files.delete(upper.id);
});
