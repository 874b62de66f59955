// LangChain's ChatOpenAI and the Vercel AI SDK's chat model as real
// clients of cmd/serve's POST /v1/chat/completions, with no workaround:
// the default chat template concatenates the messages' contents, so the
// reply continues them as cmd/generate continues the same prompt.
//
// e2e.sh starts the server and sets MINIGPT_URL (the /v1 base URL) and
// MINIGPT_KEY. Run by hand:
//
//	go run ./cmd/serve -addr 127.0.0.1:8080 -api-key k &
//	MINIGPT_URL=http://127.0.0.1:8080/v1 MINIGPT_KEY=k node --test chat.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { ChatOpenAI } from "@langchain/openai";
import { HumanMessage, SystemMessage, AIMessage } from "@langchain/core/messages";
import { generateText, streamText } from "ai";
import { createOpenAI } from "@ai-sdk/openai";

const baseURL = process.env.MINIGPT_URL;
const apiKey = process.env.MINIGPT_KEY;
if (!baseURL || !apiKey) throw new Error("set MINIGPT_URL and MINIGPT_KEY (see e2e.sh)");
const model = "lanternbay";

// Pinned from a real run of cmd/generate (prompt included):
//   go run ./cmd/generate -temperature 0.8 -seed 42 -n 60  -> SEEDED
//   go run ./cmd/generate -greedy -n 40                    -> GREEDY
const SEEDED = "the boats and writes the count in a book. the lantern burns all ";
const GREEDY = "the boats come home when the lantern glows. ";

test("LangChain ChatOpenAI: invoke and stream, a system and a human message", async () => {
  const llm = new ChatOpenAI({
    model, apiKey, configuration: { baseURL }, maxRetries: 0,
    temperature: 0.8, maxTokens: 60, modelKwargs: { seed: 42 },
  });
  const messages = [new SystemMessage("th"), new HumanMessage("e ")];
  const r = await llm.invoke(messages);
  assert.equal("the " + r.content, SEEDED);
  assert.equal(r.response_metadata.finish_reason, "length");
  assert.equal(r.usage_metadata.input_tokens, 4);
  assert.equal(r.usage_metadata.output_tokens, 60);
  let text = "";
  for await (const chunk of await llm.stream(messages)) text += chunk.content;
  assert.equal("the " + text, SEEDED);

  // A conversation: every turn's content, in order, is the prompt.
  const greedy = new ChatOpenAI({ model, apiKey, configuration: { baseURL }, maxRetries: 0, temperature: 0, maxTokens: 40 });
  const g = await greedy.invoke([new HumanMessage("t"), new AIMessage("h"), new HumanMessage("e ")]);
  assert.equal("the " + g.content, GREEDY);
  // A plain string is one human message.
  assert.equal("the " + (await greedy.invoke("the ")).content, GREEDY);
});

test("LangChain ChatOpenAI: the server's 400 is LangChain's error", async () => {
  const llm = new ChatOpenAI({ model, apiKey, configuration: { baseURL }, maxRetries: 0 });
  await assert.rejects(llm.invoke("The Keeper"), (e) => /'T' \(U\+0054\) at character index 0/.test(e.message));
});

const minigpt = createOpenAI({ baseURL, apiKey });
const chatModel = minigpt.chat(model);

test("Vercel AI SDK generateText: system and prompt, and messages", async () => {
  const a = await generateText({ model: chatModel, system: "th", prompt: "e ", maxOutputTokens: 60, temperature: 0.8, seed: 42, maxRetries: 0 });
  assert.equal("the " + a.text, SEEDED);
  assert.equal(a.finishReason, "length");
  assert.equal(a.usage.inputTokens, 4);
  assert.equal(a.usage.outputTokens, 60);
  const b = await generateText({
    model: chatModel, maxOutputTokens: 40, temperature: 0, maxRetries: 0, system: "t",
    messages: [{ role: "user", content: "h" }, { role: "assistant", content: "e" }, { role: "user", content: [{ type: "text", text: " " }] }],
  });
  assert.equal("the " + b.text, GREEDY);
  const c = await generateText({ model: chatModel, prompt: "the ", maxOutputTokens: 40, temperature: 0, stopSequences: ["lantern"], maxRetries: 0 });
  assert.equal(c.text, "boats come home when the ");
  assert.equal(c.finishReason, "stop");
});

test("Vercel AI SDK streamText: system and prompt, and messages", async () => {
  const a = streamText({ model: chatModel, system: "th", prompt: "e ", maxOutputTokens: 60, temperature: 0.8, seed: 42, maxRetries: 0 });
  let text = "";
  for await (const part of a.textStream) text += part;
  assert.equal("the " + text, SEEDED);
  assert.equal(await a.finishReason, "length");
  assert.equal((await a.usage).outputTokens, 60);
  const b = streamText({ model: chatModel, messages: [{ role: "user", content: "the " }], maxOutputTokens: 40, temperature: 0, maxRetries: 0 });
  assert.equal("the " + (await b.text), GREEDY);
});

test("Vercel AI SDK: the server's 400 is the SDK's error", async () => {
  await assert.rejects(
    generateText({ model: chatModel, system: "You are helpful.", prompt: "the ", maxRetries: 0 }),
    (e) => /'Y' \(U\+0059\) at character index 0/.test(e.message),
  );
});
