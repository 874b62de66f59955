package finetune

// This file owns the training files: POST /v1/files (OpenAI's multipart
// upload, or JSON), GET /v1/files, GET and DELETE /v1/files/{file}, GET
// /v1/files/{file}/content, the text a file trains on, and the check that
// keeps pages on other sites from posting forms here.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"example.org/minigpt/server/internal/api"
)

// builtinFileID is the built-in Lantern Bay text, always present.
const builtinFileID = "file-lanternbay"

// fileObject is an uploaded file and the text it trains on.
type fileObject struct {
	id, filename string
	created      int64
	raw          string // as uploaded
	text         string // raw, or a JSONL file's prompts and completions concatenated
	jsonl        bool
}

// fileJSON is OpenAI's file object, with the training text's length in
// characters as an extension.
type fileJSON struct {
	ID            string  `json:"id"`
	Object        string  `json:"object"`
	Bytes         int     `json:"bytes"`
	CreatedAt     int64   `json:"created_at"`
	ExpiresAt     *int64  `json:"expires_at"`
	Filename      string  `json:"filename"`
	Purpose       string  `json:"purpose"`
	Status        string  `json:"status"`
	StatusDetails *string `json:"status_details"`
	Characters    int     `json:"characters"`
	Format        string  `json:"format"` // "text" or "jsonl"
}

func (f *fileObject) json() fileJSON {
	format := "text"
	if f.jsonl {
		format = "jsonl"
	}
	return fileJSON{
		ID: f.id, Object: "file", Bytes: len(f.raw), CreatedAt: f.created, Filename: f.filename,
		Purpose: "fine-tune", Status: "processed", Characters: utf8.RuneCountInString(f.text), Format: format,
	}
}

// file returns the file called id (the built-in one included), or nil.
func (js *Jobs) file(id string) *fileObject {
	if id == builtinFileID {
		return js.builtin
	}
	for _, f := range js.files {
		if f.id == id {
			return f
		}
	}
	return nil
}

func fileNotFound(id, param string) *api.Error {
	e := api.NewError(http.StatusNotFound, "invalid_request_error", "file_not_found",
		"file %q does not exist (GET /v1/files lists the files; %s is the built-in Lantern Bay text)", id, builtinFileID)
	e.Param = api.Ptr(param)
	return e
}

// servePostFile uploads a training file: POST /v1/files, as OpenAI's
// multipart form (purpose "fine-tune" and the file), or as JSON
// {"purpose": "fine-tune", "filename": ..., "content": the text} (an
// extension for pages and curl).
func (js *Jobs) servePostFile(w http.ResponseWriter, r *http.Request) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var name string
	var raw []byte
	var aerr *api.Error
	switch mt {
	case "multipart/form-data":
		if aerr = js.crossSite(r); aerr == nil {
			name, raw, aerr = js.readMultipart(w, r)
		}
	case "application/json":
		name, raw, aerr = js.readJSONUpload(w, r)
	default:
		aerr = api.NewError(http.StatusUnsupportedMediaType, "invalid_request_error", "unsupported_media_type",
			"Content-Type %q is not supported: upload the file as multipart/form-data (purpose, file), as OpenAI's API takes it, or as JSON {\"purpose\": \"fine-tune\", \"filename\": ..., \"content\": ...}", r.Header.Get("Content-Type"))
	}
	if aerr != nil {
		api.WriteError(w, aerr)
		return
	}
	text, jsonl, aerr := trainingText(raw, name)
	if aerr != nil {
		api.WriteError(w, aerr)
		return
	}
	f := &fileObject{id: api.NewID("file-"), filename: name, created: time.Now().Unix(), raw: string(raw), text: text, jsonl: jsonl}
	if !jsonl {
		f.raw = text // one copy: the text is the file without its byte-order mark
	}
	js.mu.Lock()
	if len(js.files) >= js.cfg.MaxFiles {
		js.mu.Unlock()
		e := api.NewError(http.StatusTooManyRequests, "rate_limit_error", "too_many_files",
			"this server keeps at most %d uploaded files and has them all: delete one (DELETE /v1/files/{file}) first", js.cfg.MaxFiles)
		api.WriteError(w, e)
		return
	}
	js.files = append(js.files, f)
	js.mu.Unlock()
	api.WriteJSON(w, f.json())
}

// readMultipart reads OpenAI's upload form: the fields purpose and file,
// nothing else, the file at most MaxFileBytes.
func (js *Jobs) readMultipart(w http.ResponseWriter, r *http.Request) (string, []byte, *api.Error) {
	limit := js.cfg.MaxFileBytes
	r.Body = http.MaxBytesReader(w, r.Body, limit+64<<10) // the form's own parts besides the file
	mr, err := r.MultipartReader()
	if err != nil {
		return "", nil, api.BadParam("file", "invalid_multipart", "the multipart form cannot be read: %v", err)
	}
	var purpose, name string
	var raw []byte
	gotFile := false
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", nil, uploadReadError(err, limit)
		}
		switch p.FormName() {
		case "purpose":
			b, err := io.ReadAll(io.LimitReader(p, 64))
			if err != nil {
				return "", nil, uploadReadError(err, limit)
			}
			purpose = string(b)
		case "file":
			b, err := io.ReadAll(io.LimitReader(p, limit+1))
			if err != nil {
				return "", nil, uploadReadError(err, limit)
			}
			if int64(len(b)) > limit {
				return "", nil, fileTooLarge("file", limit)
			}
			name, raw, gotFile = p.FileName(), b, true
		default:
			return "", nil, api.BadParam(p.FormName(), "unknown_parameter", "unknown form field %q: an upload has purpose and file", p.FormName())
		}
	}
	if !gotFile {
		return "", nil, api.BadParam("file", "missing_parameter", "file is required: the training text")
	}
	if aerr := checkPurpose(purpose); aerr != nil {
		return "", nil, aerr
	}
	return cleanFilename(name), raw, nil
}

// readJSONUpload reads the JSON upload: purpose, filename and content.
func (js *Jobs) readJSONUpload(w http.ResponseWriter, r *http.Request) (string, []byte, *api.Error) {
	limit := js.cfg.MaxFileBytes
	// JSON escapes a newline in two bytes.
	f, aerr := api.ReadObject(w, r, 2*limit+4<<10, []string{"purpose", "filename", "content"}, "a JSON upload has purpose, filename and content")
	if aerr != nil {
		return "", nil, aerr
	}
	var purpose, name, content string
	for _, err := range []*api.Error{f.Str("purpose", &purpose), f.Str("filename", &name), f.Str("content", &content)} {
		if err != nil {
			return "", nil, err
		}
	}
	if aerr := checkPurpose(purpose); aerr != nil {
		return "", nil, aerr
	}
	if raw, ok := f["content"]; !ok || api.IsNull(raw) {
		return "", nil, api.BadParam("content", "missing_parameter", "content is required: the training text")
	}
	if int64(len(content)) > limit {
		return "", nil, fileTooLarge("content", limit)
	}
	if name == "" {
		name = "upload.txt"
	}
	return cleanFilename(name), []byte(content), nil
}

func checkPurpose(p string) *api.Error {
	if p != "fine-tune" {
		return api.BadParam("purpose", "invalid_value", "purpose %q is not supported: this server takes files for fine-tuning only (purpose \"fine-tune\")", p)
	}
	return nil
}

// fileTooLarge is the 400 of a training text above MaxFileBytes, naming
// the field that holds it.
func fileTooLarge(param string, limit int64) *api.Error {
	return api.BadParam(param, "file_too_large", "the %s is larger than this server's limit of %d bytes for a training text", param, limit)
}

func uploadReadError(err error, limit int64) *api.Error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return fileTooLarge("file", limit)
	}
	return api.BadParam("file", "invalid_multipart", "reading the multipart form: %v", err)
}

// cleanFilename keeps a file name's last path element, in valid UTF-8, at
// most 256 bytes: it is only ever shown back.
func cleanFilename(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.ToValidUTF8(name, "?")
	for len(name) > 256 {
		_, n := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-n]
	}
	if name == "" {
		name = "upload"
	}
	return name
}

// crossSite refuses a request that a web page on another origin sent: a
// browser sends a multipart form, or a POST without a body, to any server
// without asking first (JSON needs a CORS preflight), and names the page
// in Origin. Clients that are not browsers send no Origin.
func (js *Jobs) crossSite(r *http.Request) *api.Error {
	o := r.Header.Get("Origin")
	if o == "" || (js.opt.CORSOrigin != "" && o == js.opt.CORSOrigin) {
		return nil
	}
	if u, err := url.Parse(o); err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host) {
		return nil
	}
	return api.NewError(http.StatusForbidden, "invalid_request_error", "cross_origin",
		"a form or a bodiless POST from the page at %s is refused: a page on another site could send one without asking; send JSON (Content-Type: application/json)", strconv.Quote(o))
}

// trainingText returns the text a file trains on: the file without a
// leading byte-order mark, or for OpenAI's legacy JSONL ({"prompt",
// "completion"} per line; a file named .jsonl, or whose first line is
// such an object) every line's prompt and completion, concatenated in
// order.
func trainingText(raw []byte, name string) (string, bool, *api.Error) {
	raw = bytes.TrimPrefix(raw, []byte("\uFEFF"))
	if !utf8.Valid(raw) {
		off := 0
		for off < len(raw) {
			r, n := utf8.DecodeRune(raw[off:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			off += n
		}
		return "", false, api.BadParam("file", "invalid_text", "the file is not valid UTF-8: byte offset %d (line %d)", off, bytes.Count(raw[:off], []byte("\n"))+1)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return "", false, api.BadParam("file", "invalid_text", "the file is empty: there is nothing to learn from")
	}
	if !isJSONL(raw, name) {
		return string(raw), false, nil
	}
	var text strings.Builder
	for i, line := range bytes.Split(raw, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(line, &rec); err != nil {
			return "", false, api.BadParam("file", "invalid_jsonl", "line %d is not a JSON object: %v (a JSONL file holds one {\"prompt\": ..., \"completion\": ...} per line)", i+1, err)
		}
		if _, ok := rec["messages"]; ok {
			return "", false, api.BadParam("file", "invalid_jsonl", "line %d is in the chat format (\"messages\"): a character model has no roles; send {\"prompt\", \"completion\"} lines or plain text", i+1)
		}
		for _, key := range []string{"prompt", "completion"} {
			v, ok := rec[key]
			if !ok {
				continue
			}
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return "", false, api.BadParam("file", "invalid_jsonl", "line %d: %s must be a string", i+1, key)
			}
			text.WriteString(s)
		}
		for key := range rec {
			if key != "prompt" && key != "completion" {
				return "", false, api.BadParam("file", "invalid_jsonl", "line %d: unknown field %q: a line holds prompt and completion", i+1, key)
			}
		}
	}
	if text.Len() == 0 {
		return "", false, api.BadParam("file", "invalid_jsonl", "the JSONL file's prompts and completions are all empty: there is nothing to learn from")
	}
	return text.String(), true, nil
}

// isJSONL reports whether a file is OpenAI's legacy JSONL: by its name, or
// by a first line that is a JSON object.
func isJSONL(raw []byte, name string) bool {
	if strings.HasSuffix(strings.ToLower(name), ".jsonl") {
		return true
	}
	first, _, _ := bytes.Cut(bytes.TrimLeft(raw, " \t\r\n"), []byte("\n"))
	var rec map[string]json.RawMessage
	return len(first) > 0 && first[0] == '{' && json.Unmarshal(bytes.TrimSpace(first), &rec) == nil
}

// serveListFiles lists the files, newest first: GET /v1/files.
func (js *Jobs) serveListFiles(w http.ResponseWriter, r *http.Request) {
	q, aerr := parseListQuery(r, 10000, "purpose", "order")
	if aerr != nil {
		api.WriteError(w, aerr)
		return
	}
	if p := r.URL.Query().Get("purpose"); p != "" && p != "fine-tune" {
		api.WriteJSON(w, listJSON[fileJSON]{Object: "list", Data: []fileJSON{}})
		return
	}
	js.mu.Lock()
	all := append([]*fileObject{js.builtin}, js.files...)
	js.mu.Unlock()
	items := make([]fileJSON, 0, len(all))
	for i := len(all) - 1; i >= 0; i-- {
		items = append(items, all[i].json())
	}
	switch r.URL.Query().Get("order") {
	case "", "desc":
	case "asc":
		slices.Reverse(items)
	default:
		api.WriteError(w, api.BadParam("order", "invalid_value", "order %q must be asc or desc", r.URL.Query().Get("order")))
		return
	}
	api.WriteJSON(w, page(items, q, func(f fileJSON) string { return f.ID }))
}

// serveFile describes a file: GET /v1/files/{file}.
func (js *Jobs) serveFile(w http.ResponseWriter, r *http.Request) {
	f, aerr := js.lookupFile(r)
	if aerr != nil {
		api.WriteError(w, aerr)
		return
	}
	api.WriteJSON(w, f.json())
}

// serveFileContent returns a file as uploaded: GET /v1/files/{file}/content.
func (js *Jobs) serveFileContent(w http.ResponseWriter, r *http.Request) {
	f, aerr := js.lookupFile(r)
	if aerr != nil {
		api.WriteError(w, aerr)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(f.raw)))
	io.WriteString(w, f.raw)
}

// serveDeleteFile deletes an uploaded file: DELETE /v1/files/{file}. Jobs
// made from it keep their text.
func (js *Jobs) serveDeleteFile(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("file")
	if id == builtinFileID {
		api.WriteError(w, api.NewError(http.StatusForbidden, "permission_error", "file_not_deletable", "%s is the built-in Lantern Bay text: it cannot be deleted", id))
		return
	}
	js.mu.Lock()
	i := slices.IndexFunc(js.files, func(f *fileObject) bool { return f.id == id })
	if i >= 0 {
		js.files = slices.Delete(js.files, i, i+1)
	}
	js.mu.Unlock()
	if i < 0 {
		api.WriteError(w, fileNotFound(id, ""))
		return
	}
	api.WriteJSON(w, struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Deleted bool   `json:"deleted"`
	}{id, "file", true})
}

func (js *Jobs) lookupFile(r *http.Request) (*fileObject, *api.Error) {
	id := r.PathValue("file")
	js.mu.Lock()
	f := js.file(id)
	js.mu.Unlock()
	if f == nil {
		return nil, fileNotFound(id, "")
	}
	return f, nil
}
