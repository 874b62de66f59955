package server

// This file owns Limits: what one request and the whole server may use.

import (
	"fmt"
	"time"
)

// Limits bound what one request and the whole server may use. A zero field
// takes its value from DefaultLimits.
type Limits struct {
	// Slots is the number of rows of each model's batch: the most
	// sequences it decodes together, every running request advancing by
	// a token per step in one forward pass with the others. A request
	// takes one row per sample (n) or beam (num_beams) until its
	// generation ends; one that needs more rows than Slots is refused
	// with a 400 naming n or num_beams.
	Slots int
	// Queue is the number of requests that may wait for rows (or for
	// room in MaxInFlightBytes), served in arrival order; a request that
	// finds no room and the queue full gets 429. A negative Queue means
	// no queue at all (0 takes the default, as every field).
	Queue int
	// QueueTimeout is how long a request may wait in the queue before it
	// gets 429.
	QueueTimeout time.Duration
	// MaxBodyBytes caps the request body (413 above it).
	MaxBodyBytes int64
	// MaxTokens caps max_tokens.
	MaxTokens int
	// MaxPromptChars caps each prompt's length in characters.
	MaxPromptChars int
	// MaxChoices caps the choices of one request: prompts × n. It may not
	// exceed 128, the most samples GenerateOptions.N allows.
	MaxChoices int
	// MaxResponseBytes caps one request's size: an upper bound, computed
	// from its fields before it runs, on the bytes of its response's
	// content (every choice's text, logprobs and trace, as the
	// non-streamed JSON holds them). A request above it is refused with
	// a 400 naming n, max_tokens, logprobs, echo and trace. See the
	// package documentation for the formula.
	MaxResponseBytes int64
	// MaxInFlightBytes caps the sizes of the requests admitted at once
	// (generating, or writing a response): a request that would exceed it
	// waits in the queue as for rows. It bounds the memory the server
	// holds for responses, whatever the clients do. It must be at least
	// MaxResponseBytes.
	MaxInFlightBytes int64
	// RequestTimeout bounds one request's generation, counted from the
	// moment it gets its rows; a request still generating then ends with
	// finish_reason "length" as far as it got, and the rest of its
	// response must be written within WriteTimeout: a request holds the
	// server for at most RequestTimeout + WriteTimeout.
	RequestTimeout time.Duration
	// WriteTimeout is how long the client may take to accept each write:
	// a client that stops reading loses its request (and its rows) after
	// it.
	WriteTimeout time.Duration
}

// DefaultLimits returns the limits cmd/serve starts with: batches of 32
// rows, a queue of 64 requests, 1 MiB bodies, 4096 tokens, 8192 prompt
// characters, 16 choices, 32 MiB per response and 128 MiB in flight,
// 10 s in the queue, 2 minutes of generation and 10 s for a client to
// accept a write.
func DefaultLimits() Limits {
	return Limits{
		Slots:            32,
		Queue:            64,
		QueueTimeout:     10 * time.Second,
		MaxBodyBytes:     1 << 20,
		MaxTokens:        4096,
		MaxPromptChars:   8192,
		MaxChoices:       16,
		MaxResponseBytes: 32 << 20,
		MaxInFlightBytes: 128 << 20,
		RequestTimeout:   2 * time.Minute,
		WriteTimeout:     10 * time.Second,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	orDefault(&l.Slots, d.Slots)
	orDefault(&l.Queue, d.Queue)
	orDefault(&l.MaxTokens, d.MaxTokens)
	orDefault(&l.MaxPromptChars, d.MaxPromptChars)
	orDefault(&l.MaxChoices, d.MaxChoices)
	orDefault(&l.MaxBodyBytes, d.MaxBodyBytes)
	orDefault(&l.MaxResponseBytes, d.MaxResponseBytes)
	// A server given only a larger per-request size still admits one.
	orDefault(&l.MaxInFlightBytes, max(d.MaxInFlightBytes, l.MaxResponseBytes))
	orDefault(&l.QueueTimeout, d.QueueTimeout)
	orDefault(&l.RequestTimeout, d.RequestTimeout)
	orDefault(&l.WriteTimeout, d.WriteTimeout)
	return l
}

// orDefault sets a field left at zero (unset) to its default.
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

func (l Limits) validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"Slots", int64(l.Slots)}, {"MaxBodyBytes", l.MaxBodyBytes},
		{"MaxTokens", int64(l.MaxTokens)}, {"MaxPromptChars", int64(l.MaxPromptChars)},
		{"MaxChoices", int64(l.MaxChoices)}, {"MaxResponseBytes", l.MaxResponseBytes},
		{"MaxInFlightBytes", l.MaxInFlightBytes}, {"QueueTimeout", int64(l.QueueTimeout)},
		{"RequestTimeout", int64(l.RequestTimeout)}, {"WriteTimeout", int64(l.WriteTimeout)},
	} {
		if f.v < 0 {
			return fmt.Errorf("server: limit %s is negative (%d)", f.name, f.v)
		}
	}
	switch {
	case l.MaxChoices > maxSamples:
		return fmt.Errorf("server: limit MaxChoices %d is above the %d samples the library generates together", l.MaxChoices, maxSamples)
	case l.MaxResponseBytes > l.MaxInFlightBytes:
		return fmt.Errorf("server: limit MaxResponseBytes %d is above MaxInFlightBytes %d: such a request could never run", l.MaxResponseBytes, l.MaxInFlightBytes)
	}
	return nil
}
