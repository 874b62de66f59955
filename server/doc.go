// Package server serves minigpt models over HTTP in the shape of OpenAI's
// legacy completions API, so that existing clients (the openai SDKs,
// curl, LangChain) can sample from a checkpoint, and ships a playground
// page that shows what each decoding knob does to the distribution.
//
// A Server is an http.Handler:
//
//	POST /v1/completions   completions, streamed as Server-Sent Events with "stream": true
//	GET  /v1/models        the models, with their vocabularies
//	GET  /v1/models/{id}   one model
//	GET  /health           {"status":"ok"}, 503 while draining
//	GET  /metrics          Prometheus text format
//	GET  /                 the playground
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
// the stage that cut them. A field the server does not know, or one the
// chosen decoding would ignore, is refused by name, never ignored.
//
// Generation is reproducible: a request with a seed returns exactly the
// text cmd/generate prints for the same settings and seed, whatever else
// the server is doing; a request without one gets a seed chosen by the
// server, returned in the response's "seed" field and its Minigpt-Seed
// header, so every response can be reproduced.
//
// Errors are OpenAI's error objects with the matching status (400 naming
// the parameter and its value, 401, 404, 405, 413, 429 with Retry-After,
// 503 while draining). Work is bounded: a fixed number of generation
// slots, a bounded queue, caps on the body, max_tokens, the prompt and
// the number of choices, and a client that disconnects frees its slot at
// once. The package uses only the standard library.
package server
