// Package server serves minigpt models over HTTP in the shape of OpenAI's
// completions and chat completions APIs, so that existing clients (the
// openai SDKs, curl, LangChain, the Vercel AI SDK) can sample from a
// checkpoint, and ships a playground page that shows what each decoding
// knob does to the distribution.
//
// A Server is an http.Handler, an http.ServeMux with these patterns (a GET
// route answers HEAD too; another method gets 405 with Allow):
//
//	POST /v1/completions       completions, streamed as Server-Sent Events with "stream": true
//	POST /v1/chat/completions  chat completions, streamed with "stream": true: a completion of the messages' prompt (below)
//	GET  /v1/models            the models, with their vocabularies
//	GET  /v1/models/{model}    one model
//	POST /v1/score             an extension: every character's log-probability and surprisal, the loss, perplexity and bits per character (score.go)
//	GET  /health               {"status":"ok","slots":…,"busy":…,"queued":…}; "draining" with 503
//	GET  /metrics              Prometheus text format
//	GET  /                     the playground (and GET /playground/{file})
//
// With Config.Training, OpenAI's fine-tuning API too (package
// internal/finetune):
//
//	POST   /v1/files                             upload a training text (multipart, as OpenAI's clients send it, or JSON)
//	GET    /v1/files, /v1/files/{file}[/content] list, describe, read; file-lanternbay is the built-in text
//	DELETE /v1/files/{file}
//	POST   /v1/fine_tuning/jobs                  train: fine-tune a served model, or a preset ("scratch") from scratch
//	GET    /v1/fine_tuning/jobs[/{job}]          list, describe
//	POST   /v1/fine_tuning/jobs/{job}/cancel     stops a running job at the end of its step
//	GET    /v1/fine_tuning/jobs/{job}/events     OpenAI's event list; ?stream=true streams them (an extension)
//	DELETE /v1/models/{model}                    a fine-tuned model
//
// One job trains at a time, the others wait in a bounded queue (429
// beyond it); between steps a job waits while any completion or score is
// in progress, so the batches keep the processors; the weights are those
// cmd/train computes with the same text, settings and seed; a succeeded
// job's model is served at once as fine_tuned_model, and saved in
// Training.Dir when set, never replacing a file. Drain and Shutdown stop a
// running job at the end of its step.
//
// Mount it in a program's own mux, under a prefix if need be:
//
//	srv, err := server.New(server.Config{Models: []server.Model{{Name: "lanternbay", Model: m, Vocab: vocab}}})
//	mux.Handle("/minigpt/", http.StripPrefix("/minigpt", srv))
//
// Besides OpenAI's fields, a request may carry the extensions llama.cpp
// and vLLM accept (top_k, min_p, repetition_penalty), Hugging Face's
// no_repeat_ngram_size, num_beams and length_penalty, and the
// playground's trace: per generated character, the most likely
// candidates with their probability after each stage of the sampler and
// the stage that cut them, and with trace_attention the attention weights
// of every layer and head that chose it. A field the server does not know, or one the
// chosen decoding would ignore, is refused by name, never ignored.
//
// # Output formats
//
// Either route may hold the generated text to one format: a regular
// expression (vLLM's guided_regex, or response_format {"type": "regex",
// "regex": ...}, an extension), a list of choices (guided_choice), a GBNF
// grammar (guided_grammar, llama.cpp's grammar), a JSON Schema
// (guided_json, llama.cpp's json_schema, OpenAI's response_format
// {"type": "json_schema", "json_schema": {"name", "schema", ...}}) or any
// JSON object (response_format {"type": "json_object"}); {"type":
// "text"} is free text. The format is compiled once per request for the
// model's vocabulary (minigpt.NewConstraint, guided.go), and every
// sample, beam and prompt of the request follows it, in the batch as
// alone. A text whose format is complete and may not go on ends with
// finish_reason "stop"; one that a stop string or the request's time cut
// short of its format carries the extension "format_incomplete": true
// in its choice (in a stream, on its last chunk). A second format, a
// malformed one (the message gives the character index from 0, and line
// and column in text of several lines), one past the engine's caps and
// one that needs characters the model never writes are 400s whose param
// is the field, before anything is generated, streamed or not; so is a
// max_tokens below the format's shortest text, once the request has its
// rows. At most half the processors compile at once (429 after
// Limits.QueueTimeout waiting), and the trace lists the format's stage,
// "grammar", after "raw".
//
// A character model trained on plain text has no roles and no end of a
// reply, so a chat completion is a completion of one prompt: the model's
// chat template (Model.ChatTemplate; by default the messages' contents
// concatenated) writes it, every character it holds must be in the
// vocabulary (a 400 names the first that is not, with its character
// index from 0), and the reply, in OpenAI's chat.completion or
// chat.completion.chunk shape, is the text POST /v1/completions returns
// for that prompt. Tools, images and audio are refused by name.
//
// Generation is reproducible: a request with a seed returns exactly the
// text cmd/generate prints for the same settings and seed, whatever else
// the server is doing; a request without one gets a seed chosen by the
// server, returned in the response's "seed" field and its Minigpt-Seed
// header, so every response can be reproduced.
//
// # Continuous batching
//
// Each model generates through one minigpt.Batch of Limits.Slots rows:
// its decoding loops (one per processor) advance every running request by
// one token per step (a long prompt by chunks of 64 positions, beside the
// others) in forward passes over several requests' rows, requests join
// at the next step and leave when they finish, are cancelled, run out of
// time or lose their client, and their rows free at once. A
// request takes one row per sample (n) or beam (num_beams), its prompts
// in turn; one that needs more rows than a batch has is refused with a
// 400 naming n or num_beams. Every response is byte for byte the one the
// same request gets alone (text, logprobs, trace, finish reasons, usage,
// every event of a stream), whatever else is in the batch and whenever
// it arrives, at any Limits.Slots and GOMAXPROCS: rows never mix in a
// forward pass, and each output has one summation order.
//
// A request that finds too few free rows (or too little of the in-flight
// budget) waits in a bounded queue, served in arrival order: it starts
// as soon as its rows and bytes are free unless a request that came
// before it still waits for the same model's rows or for bytes it would
// take, so nothing that arrived later delays it. A full queue, or a wait
// over Limits.QueueTimeout, is a 429 with Retry-After. A stream's events
// are written on its request's own goroutine: a client that reads slowly
// slows only its own request, which pauses once 4096 events wait for it.
//
// # Doors
//
// Before the mux routes a request, wrappers (each a
// func(http.Handler) http.Handler, in doors.go) log and count it, then,
// in this order:
//
//   - Host: a request that arrives on a loopback address must
//     name localhost, a *.localhost name or a loopback address in its Host
//     header, or one of Config.AllowedHosts; anything else is a 403. A web
//     page can point a name it controls at 127.0.0.1 (DNS rebinding), but
//     the browser still sends that name as Host, so the page cannot read
//     this server's answers.
//   - CORS: with Config.CORSOrigin, every /v1/ response carries
//     Access-Control-Allow-Origin and a preflight gets 204 with the methods
//     the path is served with; without it, browsers on other origins
//     cannot call the API.
//   - Draining: once Drain, Shutdown or Close is called, every
//     /v1/ request gets 503 with Retry-After, on any connection, idle
//     keep-alive ones included.
//   - The API key: with Config.APIKey, every /v1/ path (unknown
//     ones included) needs "Authorization: Bearer <key>", the scheme in
//     any case (RFC 7235); 401 otherwise. The playground, /health and
//     /metrics stay open.
//   - Content-Type (on each POST route): a POST body must be application/json
//     (415 otherwise): a page on another site can send a form or
//     text/plain anywhere without asking, but JSON needs a CORS preflight.
//     The two exceptions, OpenAI's multipart upload to /v1/files and a
//     bodiless cancel of a job, are refused with 403 when their Origin
//     header names another site.
//
// Together, Host and Content-Type keep a server on loopback without a key
// out of reach of web pages; on any other address, set an API key.
//
// # Limits
//
// Errors are OpenAI's error objects with the matching status (400 naming
// the parameter and its value, 401, 403, 404, 405, 413, 415, 429 with
// Retry-After, 503 while draining). Work is bounded (Limits): a fixed
// number of batch rows per model, a bounded queue, caps on the body,
// max_tokens, the prompt and the number of choices, and on each request's
// size: an upper bound, computed from its fields before it runs, on its
// response's content,
//
//	Σ over choices (prompts × n) of (echoed prompt characters + max_tokens)
//	  × bytes per character,
//
// where a character costs 8 bytes of text, plus 48 + 34 × (logprobs+1)
// with logprobs, plus a trace step of at most trace+1 candidates over
// every stage with trace, and of layers × heads × block size weights
// with trace_attention (size.go has the constants); a request with an
// output format is charged besides 1 KiB per token of every row
// (prompts × rows × max_tokens), at most 64 MiB, for the engine's cache
// of the format's states. A request above
// Limits.MaxResponseBytes is refused with a 400 that names n, max_tokens,
// logprobs, echo and trace; requests whose sizes together exceed
// Limits.MaxInFlightBytes wait in the queue, which bounds the memory the
// server holds for responses. A non-streamed response is written choice by
// choice as generation ends, never held encoded whole.
//
// Nothing is sent before a generation's first tokens: a request the
// library refuses at its first token (every id banned by logit_bias)
// gets the same 400 streamed or not. Once a stream has begun, a later
// failure is its last event, before "data: [DONE]".
//
// A client that disconnects frees its rows at once; one that stops
// reading loses its request after Limits.WriteTimeout once what its
// connection can hold unread is full. The handler does not own the
// listener: cmd/serve bounds each connection's send buffer (64 KiB), so
// that takes about 200 KiB of a stream; a program serving the handler on
// its own listener should do the same (net.TCPConn.SetWriteBuffer), or
// the kernel's buffers (up to 4 MB on Linux) hold a whole long stream and
// its rows stay taken until the generation ends.
//
// With Config.Training, an upload is admitted before its body is read:
// charged a bound on what reading it holds (a few bytes per byte of its
// declared length) against a budget of two uploads as large as
// Training.MaxFileBytes allows; a declared length above the cap is a
// 413, no room a 429 (internal/finetune/upload.go). A generation ends
// at Limits.RequestTimeout with finish_reason "length" as far as it got,
// and its response must be written within WriteTimeout more.
//
// # Shutdown
//
// Shutdown (or Drain, then Shutdown) makes the API answer 503 and waits
// for the requests in progress and in the queue; at its deadline, or on
// Close, every generation still running ends as the request timeout ends
// it (finish_reason "length", its usage, "data: [DONE]") and queued ones
// get 503. Keep the listener open until Shutdown returns, then shut the
// http.Server down, so that no request meets a closed connection. An idle
// batch holds no goroutine, so there is nothing more to stop.
//
// # Metrics
//
// GET /metrics writes Prometheus' text format (version 0.0.4):
//
//	minigpt_http_requests_total{path,code}       counter    requests by route and status
//	minigpt_completion_duration_seconds          histogram  a completion's (or chat completion's) latency, arrival to last byte
//	minigpt_queue_wait_seconds                   histogram  an admitted completion's wait for its rows and bytes
//	minigpt_time_to_first_token_seconds          histogram  arrival to its first generated token released
//	minigpt_generated_tokens_total{model}        counter    completion tokens returned (a prompt's, once it ends)
//	minigpt_prompt_tokens_total{model}           counter    prompt tokens processed
//	minigpt_generations_cancelled_total          counter    generations whose client went away or stopped reading
//	minigpt_batch_tokens_total{model}            counter    tokens the batch generated, every sample's and beam's, at each step
//	minigpt_batch_steps_total{model}             counter    the batch's steps
//	minigpt_batch_rows{model}                    histogram  rows in use at each step: the batch size
//	minigpt_batch_rows_busy{model}               gauge      rows in use now
//	minigpt_slots, minigpt_slots_busy            gauge      rows per model (Limits.Slots); rows taken by admitted requests
//	minigpt_queue_depth, minigpt_queue_capacity  gauge      requests waiting; the most that may wait
//	minigpt_inflight_bytes, ..._budget_bytes     gauge      size bounds of the requests in flight; their budget
//
// Generated tokens per second is rate(minigpt_batch_tokens_total[1m]),
// which moves at every step (minigpt_generated_tokens_total counts a
// prompt's tokens when it ends); the mean batch size is
// rate(minigpt_batch_rows_sum[1m]) / rate(minigpt_batch_rows_count[1m]).
// The latency histograms' bounds are in seconds, the batch size's in
// rows (the powers of two below Limits.Slots, and Limits.Slots).
//
// The package uses only the standard library.
package server
