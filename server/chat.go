package server

// This file owns POST /v1/chat/completions: its fields, the messages, and
// the chat template that turns them into the prompt a character model
// continues.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"text/template"
	"time"
	"unicode/utf8"

	"example.org/minigpt/server/internal/api"
)

// chatFields are the fields POST /v1/chat/completions accepts.
var chatFields = []string{
	"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "n",
	"stream", "stream_options", "logprobs", "top_logprobs", "stop", "seed", "presence_penalty",
	"frequency_penalty", "logit_bias", "user", "response_format",
	// Extensions that llama.cpp and vLLM accept.
	"top_k", "min_p", "repetition_penalty", "no_repeat_ngram_size",
	"num_beams", "length_penalty",
	"guided_regex", "guided_choice", "guided_grammar", "guided_json", "grammar", "json_schema",
}

// chatRefused are OpenAI's chat fields a character model cannot honour,
// each refused by name with the reason (null, and an empty list of tools,
// pass as absent).
var chatRefused = []struct{ name, why string }{
	{"tools", "tools are not supported: a character model has no function calling"},
	{"tool_choice", "tool_choice is not supported: a character model has no function calling"},
	{"parallel_tool_calls", "parallel_tool_calls is not supported: a character model has no function calling"},
	{"functions", "functions are not supported: a character model has no function calling"},
	{"function_call", "function_call is not supported: a character model has no function calling"},
	{"audio", "audio output is not supported: a character model writes text"},
	{"modalities", `modalities other than ["text"] are not supported: a character model writes text`},
}

// defaultChatTemplate is the chat template of a model given without one:
// the messages' contents concatenated in order, with nothing between them
// and no role, so that the reply continues the text as a model trained on
// plain text (which never saw a dialogue) can.
const defaultChatTemplate = `{{range .Messages}}{{.Content}}{{end}}`

// defaultChat is defaultChatTemplate, parsed.
var defaultChat = template.Must(parseChatTemplate("default", ""))

// chatData is what a chat template executes on.
type chatData struct {
	Messages []chatMessage
}

// chatMessage is one message as a chat template sees it.
type chatMessage struct {
	Role    string // system, developer, user or assistant
	Content string // its text (a list of text parts, concatenated)
	Name    string // the participant's name, if the client gave one
}

// parseChatTemplate parses a model's chat template ("" is
// defaultChatTemplate).
func parseChatTemplate(model, text string) (*template.Template, error) {
	if text == "" {
		text = defaultChatTemplate
	}
	t, err := template.New(model).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	return t, nil
}

// serveChat answers POST /v1/chat/completions.
func (s *Server) serveChat(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	req, aerr := s.parseChat(w, r)
	if aerr != nil {
		api.WriteError(w, aerr)
		return
	}
	s.serveGeneration(w, r, req, arrived)
}

// parseChat reads and validates a chat completion request: its messages
// become one prompt through the model's chat template, and the reply is
// a completion of it.
func (s *Server) parseChat(w http.ResponseWriter, r *http.Request) (*completionRequest, *api.Error) {
	body, aerr := api.ReadBody(w, r, s.limits.MaxBodyBytes)
	if aerr != nil {
		return nil, aerr
	}
	f, aerr := api.DecodeObject(body)
	if aerr != nil {
		return nil, aerr
	}
	refused := func(name string) bool {
		return slices.ContainsFunc(chatRefused, func(r struct{ name, why string }) bool { return r.name == name })
	}
	for _, r := range chatRefused {
		if raw, ok := f[r.name]; ok && !api.IsNull(raw) && string(bytes.TrimSpace(raw)) != "[]" && !textOnly(r.name, raw) {
			return nil, api.BadParam(r.name, "unsupported_parameter", "%s", r.why)
		}
	}
	for name := range f {
		if !refused(name) && !slices.Contains(chatFields, name) {
			return nil, api.BadParam(name, "unknown_parameter", "unknown parameter %q: a chat completion accepts %s", name, strings.Join(chatFields, ", "))
		}
	}
	// Without a limit a reply runs until the server's: a character model
	// writes no end of text.
	req := newRequest(s.limits.MaxTokens)
	req.chat = true
	if req.model, aerr = s.requestModel(f); aerr != nil {
		return nil, aerr
	}
	msgs, aerr := parseMessages(f)
	if aerr != nil {
		return nil, aerr
	}
	if aerr := s.chatPrompt(req, msgs); aerr != nil {
		return nil, aerr
	}
	sp := &req.sampling
	if err := maxTokens(f, sp, s.limits.MaxTokens); err != nil {
		return nil, err
	}
	if err := s.parseKnobs(f, req); err != nil {
		return nil, err
	}
	var logprobs bool
	if err := f.Bool("logprobs", &logprobs); err != nil {
		return nil, err
	}
	top := 0
	if err := f.Integer("top_logprobs", &top, 0, min(maxLogprobs, len(req.model.chars))); err != nil {
		return nil, err
	}
	switch {
	case logprobs:
		sp.logprobs = top
	case f.Has("top_logprobs"):
		return nil, api.BadParam("top_logprobs", "invalid_value", "top_logprobs needs logprobs: true")
	}
	if err := s.checkRequest(r.Context(), req); err != nil {
		return nil, err
	}
	return req, nil
}

// textOnly reports whether a refused field asks for nothing but text
// (modalities ["text"]), which a character model gives.
func textOnly(name string, raw json.RawMessage) bool {
	var m []string
	return name == "modalities" && json.Unmarshal(raw, &m) == nil && len(m) == 1 && m[0] == "text"
}

// maxTokens reads max_completion_tokens, OpenAI's current name, or
// max_tokens, its former one: both give the same cap, so both may be
// given only with the same value.
func maxTokens(f api.Fields, sp *sampling, limit int) *api.Error {
	a, b := sp.maxTokens, sp.maxTokens
	for _, err := range []*api.Error{
		f.Integer("max_tokens", &a, 0, limit),
		f.Integer("max_completion_tokens", &b, 0, limit),
	} {
		if err != nil {
			return err
		}
	}
	if f.Has("max_tokens") && f.Has("max_completion_tokens") && a != b {
		return api.BadParam("max_completion_tokens", "invalid_value", "max_tokens %d and max_completion_tokens %d differ: give one of them (max_completion_tokens is the current name)", a, b)
	}
	sp.maxTokens = a
	if f.Has("max_completion_tokens") {
		sp.maxTokens = b
	}
	return nil
}

// chatRoles are the roles a message may have; tool results have none
// here, as there are no tools.
var chatRoles = []string{"system", "developer", "user", "assistant"}

// parseMessages reads messages: a list of at least one message, each a
// role, a content (a string or a list of text parts) and maybe a name.
// Tool calls, tool results, images, audio and files are refused by name.
func parseMessages(f api.Fields) ([]chatMessage, *api.Error) {
	raw, ok := f["messages"]
	if !ok || api.IsNull(raw) {
		return nil, api.BadParam("messages", "missing_parameter", "messages is required: the conversation so far, whose contents the model continues")
	}
	var list []json.RawMessage
	if api.Kind(raw) != "an array" || json.Unmarshal(raw, &list) != nil {
		return nil, api.WrongType("messages", "an array of messages", raw)
	}
	if len(list) == 0 {
		return nil, api.BadParam("messages", "invalid_value", "messages is empty: give at least one message")
	}
	msgs := make([]chatMessage, len(list))
	for i, rm := range list {
		where := fmt.Sprintf("messages[%d]", i)
		m, aerr := api.DecodeObject(rm)
		if aerr != nil {
			return nil, api.WrongType(where, "a message object", rm)
		}
		msg := &msgs[i]
		if err := m.Str("role", &msg.Role); err != nil {
			err.Param = api.Ptr(where + ".role")
			return nil, err
		}
		switch {
		case msg.Role == "tool" || msg.Role == "function":
			return nil, api.BadParam(where+".role", "unsupported_parameter", "%s.role %q: tool results are not supported: a character model has no function calling", where, msg.Role)
		case !slices.Contains(chatRoles, msg.Role):
			return nil, api.BadParam(where+".role", "invalid_value", "%s.role %q must be one of %s", where, msg.Role, strings.Join(chatRoles, ", "))
		}
		for k, v := range m {
			switch k {
			case "role", "content", "name":
			case "tool_calls", "function_call", "tool_call_id":
				if !api.IsNull(v) && string(bytes.TrimSpace(v)) != "[]" {
					return nil, api.BadParam(where+"."+k, "unsupported_parameter", "%s.%s: tools are not supported: a character model has no function calling", where, k)
				}
			case "audio":
				if !api.IsNull(v) {
					return nil, api.BadParam(where+".audio", "unsupported_parameter", "%s.audio: audio is not supported: a character model reads and writes text", where)
				}
			case "refusal":
				if !api.IsNull(v) {
					return nil, api.BadParam(where+".refusal", "unsupported_parameter", "%s.refusal is not supported: give the text as content", where)
				}
			default:
				return nil, api.BadParam(where+"."+k, "unknown_parameter", "unknown parameter %s.%s: a message has role, content and name", where, k)
			}
		}
		if err := m.Str("name", &msg.Name); err != nil {
			err.Param = api.Ptr(where + ".name")
			return nil, err
		}
		content, aerr := messageContent(where, m["content"])
		if aerr != nil {
			return nil, aerr
		}
		msg.Content = content
	}
	return msgs, nil
}

// messageContent reads a message's content: a string, or a list of
// parts of which only text parts are accepted, concatenated.
func messageContent(where string, raw json.RawMessage) (string, *api.Error) {
	param := where + ".content"
	if raw == nil || api.IsNull(raw) {
		return "", api.BadParam(param, "missing_parameter", "%s is required: the message's text", param)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []json.RawMessage
	if api.Kind(raw) != "an array" || json.Unmarshal(raw, &parts) != nil {
		return "", api.WrongType(param, "a string or an array of content parts", raw)
	}
	var b strings.Builder
	for j, rp := range parts {
		at := fmt.Sprintf("%s[%d]", param, j)
		var p struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if api.Kind(rp) != "an object" || json.Unmarshal(rp, &p) != nil {
			return "", api.WrongType(at, `a content part {"type": "text", "text": ...}`, rp)
		}
		switch p.Type {
		case "text":
			if p.Text == nil {
				return "", api.BadParam(at+".text", "missing_parameter", "%s.text is required", at)
			}
			b.WriteString(*p.Text)
		case "image_url", "image":
			return "", api.BadParam(at, "unsupported_content", "%s is an image: images are not supported, a character model reads text", at)
		case "input_audio", "audio":
			return "", api.BadParam(at, "unsupported_content", "%s is audio: audio is not supported, a character model reads text", at)
		case "file":
			return "", api.BadParam(at, "unsupported_content", "%s is a file: files are not supported, send the text as a text part", at)
		default:
			return "", api.BadParam(at+".type", "unsupported_content", "%s.type %q is not supported: only text parts are", at, p.Type)
		}
	}
	return b.String(), nil
}

// chatPrompt makes req's prompt from msgs with its model's chat
// template: every character of the messages, and then of the prompt, must
// be in the model's vocabulary (a 400 names the first that is not, with
// its character index counted from 0), and the prompt may not be empty
// or above MaxPromptChars.
func (s *Server) chatPrompt(req *completionRequest, msgs []chatMessage) *api.Error {
	m := req.model
	known := make(map[rune]bool, len(m.chars))
	for _, c := range m.chars {
		known[c] = true
	}
	unknown := func(text string) (rune, int, bool) {
		i := 0
		for _, c := range text {
			if !known[c] {
				return c, i, true
			}
			i++
		}
		return 0, 0, false
	}
	vocab := ""
	if len(m.chars) <= 200 {
		vocab = fmt.Sprintf(" %q", string(m.chars))
	}
	for i, msg := range msgs {
		if c, at, ok := unknown(msg.Content); ok {
			return api.BadParam("messages", "unknown_character", "messages[%d].content: the character %s at character index %d (counted from 0) is not in model %s's vocabulary%s",
				i, api.QuoteChar(c), at, m.name, vocab)
		}
	}
	limit := s.limits.MaxPromptChars
	out := &cappedBuffer{limit: 4 * limit} // UTF-8: at most 4 bytes a character
	if err := m.chat.Execute(out, chatData{Messages: msgs}); err != nil {
		if errors.Is(err, errPromptTooLong) {
			return api.BadParam("messages", "invalid_value", "the prompt the chat template of model %s makes of these messages is longer than this server's limit of %d characters", m.name, limit)
		}
		return api.NewError(http.StatusInternalServerError, "server_error", "chat_template_failed", "the chat template of model %s failed on these messages: %v", m.name, err)
	}
	prompt := out.String()
	if c, at, ok := unknown(prompt); ok {
		return api.BadParam("messages", "unknown_character", "the chat template of model %s adds the character %s, at character index %d (counted from 0) of the prompt it makes, which is not in the model's vocabulary%s",
			m.name, api.QuoteChar(c), at, vocab)
	}
	switch n := utf8.RuneCountInString(prompt); {
	case n == 0:
		return api.BadParam("messages", "invalid_value", "the messages' prompt is empty: a character model needs at least one character to continue")
	case n > limit:
		return api.BadParam("messages", "invalid_value", "the messages' prompt has %d characters, above this server's limit of %d", n, limit)
	}
	ids, err := m.engine.encode(prompt)
	if err != nil {
		return api.BadParam("messages", "unknown_character", "the messages' prompt: %v", err)
	}
	req.prompts, req.promptIDs = []string{prompt}, [][]int{ids}
	return nil
}

// errPromptTooLong stops a chat template whose prompt outgrows its cap.
var errPromptTooLong = errors.New("the prompt is too long")

// cappedBuffer is a buffer that refuses to grow past limit bytes: a
// template that loops over the messages cannot make an unbounded prompt.
type cappedBuffer struct {
	bytes.Buffer
	limit int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.limit {
		return 0, errPromptTooLong
	}
	return b.Buffer.Write(p)
}
