package finetune

// This file owns a job's events: GET /v1/fine_tuning/jobs/{job}/events,
// OpenAI's list (newest first, with after and limit), and with
// ?stream=true an extension for the playground: every event so far, oldest
// first, then each new one as it happens, as Server-Sent Events, ending
// with "data: [DONE]" once the job has finished.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"example.org/minigpt/server/internal/api"
)

// event is one entry of a job's log.
type event struct {
	seq     int // from 1, in order
	created int64
	level   string // info, warn or error
	typ     string // message or metrics
	message string
	data    any // nil, metricsJSON or sampleJSON
}

// eventJSON is OpenAI's fine_tuning.job.event object.
type eventJSON struct {
	Object    string `json:"object"`
	ID        string `json:"id"`
	CreatedAt int64  `json:"created_at"`
	Level     string `json:"level"`
	Message   string `json:"message"`
	Data      any    `json:"data"`
	Type      string `json:"type"`
}

func (e *event) json(j *job) eventJSON {
	data := e.data
	if data == nil {
		data = struct{}{}
	}
	id := fmt.Sprintf("ftevent-%s-%d", strings.TrimPrefix(j.id, "ftjob-"), e.seq)
	return eventJSON{Object: "fine_tuning.job.event", ID: id, CreatedAt: e.created, Level: e.level, Message: e.message, Data: data, Type: e.typ}
}

// streamKeepAlive is how often an idle stream gets a comment, so that a
// client that is gone is noticed and a proxy keeps the connection.
const streamKeepAlive = 15 * time.Second

// serveJobEvents lists a job's events, or streams them with stream=true.
func (js *Jobs) serveJobEvents(w http.ResponseWriter, r *http.Request) {
	j, aerr := js.lookupJob(r)
	if aerr != nil {
		api.WriteError(w, aerr)
		return
	}
	q, aerr := parseListQuery(r, 20, "stream")
	if aerr != nil {
		api.WriteError(w, aerr)
		return
	}
	switch v := r.URL.Query().Get("stream"); v {
	case "", "false":
	case "true":
		js.streamEvents(w, r, j, q.after)
		return
	default:
		api.WriteError(w, api.BadParam("stream", "invalid_value", "stream %q must be true or false", v))
		return
	}
	js.mu.Lock()
	items := make([]eventJSON, 0, len(j.events))
	for i := len(j.events) - 1; i >= 0; i-- {
		items = append(items, j.events[i].json(j))
	}
	js.mu.Unlock()
	api.WriteJSON(w, page(items, q, func(e eventJSON) string { return e.ID }))
}

// streamEvents sends j's events after the one with the id after (all of
// them without it), oldest first, then each new one, until the job has
// finished or the client goes. Every write must be accepted within
// WriteTimeout.
func (js *Jobs) streamEvents(w http.ResponseWriter, r *http.Request, j *job, after string) {
	next := 0
	if after != "" {
		js.mu.Lock()
		i := slices.IndexFunc(j.events, func(e event) bool { return e.json(j).ID == after })
		js.mu.Unlock()
		if i < 0 {
			api.WriteError(w, api.BadParam("after", "invalid_value", "after %q is not an event of job %s", after, j.id))
			return
		}
		next = i + 1
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	out := api.NewClientWriter(w, js.opt.WriteTimeout, time.Now().Add(100*365*24*time.Hour))
	bw := bufio.NewWriterSize(out, 4<<10)
	flush := func() bool { return bw.Flush() == nil && out.Flush() == nil }
	keepAlive := time.NewTicker(streamKeepAlive)
	defer keepAlive.Stop()
	for {
		js.mu.Lock()
		evs := j.events[next:]
		changed, finished := j.changed, j.finished != 0
		items := make([]eventJSON, len(evs))
		for i := range evs {
			items[i] = evs[i].json(j)
		}
		js.mu.Unlock()
		next += len(items)
		for _, e := range items {
			b, _ := json.Marshal(e)
			bw.WriteString("data: ")
			bw.Write(b)
			bw.WriteString("\n\n")
		}
		if finished {
			bw.WriteString("data: [DONE]\n\n")
			flush()
			return
		}
		if len(items) > 0 && !flush() {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		case <-keepAlive.C:
			bw.WriteString(": keep-alive\n\n")
			if !flush() {
				return
			}
		}
	}
}
