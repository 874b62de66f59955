package finetune

// This file owns the training files: POST /v1/files (its body is read in
// upload.go), GET /v1/files, GET and DELETE /v1/files/{file}, GET
// /v1/files/{file}/content, and the check that keeps pages on other sites
// from posting forms here.

import (
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
// extension for pages and curl). Before a byte of the body is read, the
// upload is admitted (admitUpload): its declared length against its
// shape's cap (413), the files kept and being uploaded against MaxFiles,
// and its memory against the uploads' budget (429).
func (js *Jobs) servePostFile(w http.ResponseWriter, r *http.Request) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var shape uploadShape
	switch mt {
	case "multipart/form-data":
		if aerr := js.crossSite(r); aerr != nil {
			refuseUnread(w, r, aerr, bodyCap(multipartUpload, js.cfg.MaxFileBytes))
			return
		}
		shape = multipartUpload
	case "application/json":
		shape = jsonUpload
	default:
		refuseUnread(w, r, api.NewError(http.StatusUnsupportedMediaType, "invalid_request_error", "unsupported_media_type",
			"Content-Type %q is not supported: upload the file as multipart/form-data (purpose, file), as OpenAI's API takes it, or as JSON {\"purpose\": \"fine-tune\", \"filename\": ..., \"content\": ...}", r.Header.Get("Content-Type")),
			bodyCap(jsonUpload, js.cfg.MaxFileBytes))
		return
	}
	charge, aerr := js.admitUpload(shape, r.ContentLength)
	if aerr != nil {
		refuseUnread(w, r, aerr, bodyCap(shape, js.cfg.MaxFileBytes))
		return
	}
	defer js.leaveUpload(charge)
	var name, raw string
	if shape == multipartUpload {
		name, raw, aerr = js.readMultipart(w, r)
	} else {
		name, raw, aerr = js.readJSONUpload(w, r)
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
	f := &fileObject{id: api.NewID("file-"), filename: name, created: time.Now().Unix(), raw: raw, text: text, jsonl: jsonl}
	if !jsonl {
		f.raw = text // the file without its byte-order mark: one copy
	}
	js.mu.Lock()
	js.files = append(js.files, f) // admitUpload kept a place for it
	js.mu.Unlock()
	api.WriteJSON(w, f.json())
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
