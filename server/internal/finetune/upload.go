package finetune

// This file owns an upload's body: its admission against the file cap
// and the uploads' memory budget before anything is read, reading it
// (OpenAI's multipart form, or JSON) with as few copies as it takes, its
// file name, and the text a file trains on.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"example.org/minigpt/internal/textpos"
	"example.org/minigpt/server/internal/api"
)

// uploadShape is how an upload's body is encoded.
type uploadShape int

const (
	multipartUpload uploadShape = iota
	jsonUpload
)

func (s uploadShape) String() string {
	if s == jsonUpload {
		return "JSON"
	}
	return "multipart"
}

// formOverhead bounds a multipart form's parts besides the file: the
// boundaries, the part headers and purpose.
const formOverhead = 64 << 10

// bodyCap is the largest body an upload of shape may have for a file of
// limit bytes: the file and the form's other parts, or in JSON the text
// escaped (a newline takes two bytes) and the other fields.
func bodyCap(shape uploadShape, limit int64) int64 {
	if shape == jsonUpload {
		return 2*limit + 4<<10
	}
	return limit + formOverhead
}

// An upload is charged, before its body is read, what reading it holds
// at once: per byte of its body, multipartCost for a form (the file read
// once into the string it is kept as, and a JSONL file's text as it
// grows), jsonCost for JSON (the body, the content as the decoder
// unescapes it and as its string, and a JSONL file's text), plus
// uploadSlack (buffers, the 32 KiB copy buffer). TestUploadMemory
// measures them: a plain form allocates 1.06 bytes a byte of body, JSON
// 2.99 (2.51 when its content is all escapes); a JSONL file's decoding
// makes about 20 bytes of garbage a byte, line by line, and holds no more
// than a plain file's.
const (
	multipartCost = 3
	jsonCost      = 4
	uploadSlack   = 256 << 10
)

// uploadCost is the memory charged for an upload of shape with an n-byte
// body.
func uploadCost(shape uploadShape, n int64) int64 {
	if shape == jsonUpload {
		return jsonCost*n + uploadSlack
	}
	return multipartCost*n + uploadSlack
}

// uploadsAtOnce is how many uploads of the largest kind (JSON at its
// cap) the budget holds at once; more, smaller ones fit (5 forms of a
// 4 MiB file at the default -train-max-file).
const uploadsAtOnce = 2

// uploadBudget is the memory all the uploads being read may be charged at
// once: uploadsAtOnce JSON uploads as large as MaxFileBytes allows.
func (js *Jobs) uploadBudget() int64 {
	return uploadsAtOnce * uploadCost(jsonUpload, bodyCap(jsonUpload, js.cfg.MaxFileBytes))
}

// admitUpload admits an upload whose body declares length bytes (-1: not
// declared, so the cap is charged), before any of it is read: a length
// above the shape's cap is a 413; with MaxFiles files kept and being
// uploaded, or the budget taken, a 429. It returns the charge, which the
// caller gives back with leaveUpload.
func (js *Jobs) admitUpload(shape uploadShape, length int64) (int64, *api.Error) {
	bodyLimit := bodyCap(shape, js.cfg.MaxFileBytes)
	if length > bodyLimit {
		return 0, api.NewError(http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large",
			"the upload's body is %d bytes, above this server's limit of %d for a %s upload (a training text of at most %d bytes)", length, bodyLimit, shape, js.cfg.MaxFileBytes)
	}
	n := bodyLimit
	if length >= 0 {
		n = length
	}
	charge := uploadCost(shape, n)
	js.mu.Lock()
	defer js.mu.Unlock()
	if kept := len(js.files) + js.uploading; kept >= js.cfg.MaxFiles {
		more := ""
		if js.uploading > 0 {
			more = fmt.Sprintf(" (%d of them being uploaded)", js.uploading)
		}
		return 0, api.Busy("too_many_files", 1, "this server keeps at most %d uploaded files and has them all%s: delete one (DELETE /v1/files/{file}) first", js.cfg.MaxFiles, more)
	}
	if budget := js.uploadBudget(); js.uploadBytes+charge > budget {
		return 0, api.Busy("uploads_busy", 1, "the uploads being read hold %d of the %d bytes this server lets uploads take, and this one needs %d (%d per byte of its %d-byte body): retry later",
			js.uploadBytes, budget, charge, charge/max(n, 1), n)
	}
	js.uploading++
	js.uploadBytes += charge
	return charge, nil
}

// refuseUnread answers an upload with e before reading its body, then
// reads the body into nothing (no memory held), at most 2 × bodyLimit
// bytes: a client still sending it then reads the answer instead of a
// connection reset. A body declared larger is not read: the connection
// closes after the answer.
func refuseUnread(w http.ResponseWriter, r *http.Request, e *api.Error, bodyLimit int64) {
	drain := r.ContentLength <= 2*bodyLimit
	if !drain {
		w.Header().Set("Connection", "close")
	}
	api.WriteError(w, e)
	if drain {
		http.NewResponseController(w).Flush()
		io.Copy(io.Discard, io.LimitReader(r.Body, 2*bodyLimit))
	}
}

// leaveUpload gives back an upload's charge and its place among the files.
func (js *Jobs) leaveUpload(charge int64) {
	js.mu.Lock()
	defer js.mu.Unlock()
	js.uploading--
	js.uploadBytes -= charge
}

// readMultipart reads OpenAI's upload form: the fields purpose and file,
// nothing else, the file at most MaxFileBytes. The file is read straight
// into the string it is kept as.
func (js *Jobs) readMultipart(w http.ResponseWriter, r *http.Request) (string, string, *api.Error) {
	limit := js.cfg.MaxFileBytes
	r.Body = http.MaxBytesReader(w, r.Body, bodyCap(multipartUpload, limit))
	mr, err := r.MultipartReader()
	if err != nil {
		return "", "", api.BadParam("file", "invalid_multipart", "the multipart form cannot be read: %v", err)
	}
	var purpose, name, raw string
	gotFile := false
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", "", uploadReadError(err, limit)
		}
		switch p.FormName() {
		case "purpose":
			b, err := io.ReadAll(io.LimitReader(p, 64))
			if err != nil {
				return "", "", uploadReadError(err, limit)
			}
			purpose = string(b)
		case "file":
			var b strings.Builder
			if r.ContentLength > 0 {
				b.Grow(int(min(r.ContentLength, limit+1)))
			}
			if _, err := io.Copy(&b, io.LimitReader(p, limit+1)); err != nil {
				return "", "", uploadReadError(err, limit)
			}
			if int64(b.Len()) > limit {
				return "", "", fileTooLarge("file", limit)
			}
			name, raw, gotFile = p.FileName(), b.String(), true
			if aerr := checkFilename("file", "the file's name", name); aerr != nil {
				return "", "", aerr
			}
		default:
			return "", "", api.BadParam(p.FormName(), "unknown_parameter", "unknown form field %q: an upload has purpose and file", p.FormName())
		}
	}
	if !gotFile {
		return "", "", api.BadParam("file", "missing_parameter", "file is required: the training text")
	}
	if aerr := checkPurpose(purpose); aerr != nil {
		return "", "", aerr
	}
	return cleanFilename(name), raw, nil
}

// uploadFields are the fields of a JSON upload.
var uploadFields = []string{"purpose", "filename", "content"}

// readJSONUpload reads the JSON upload: purpose, filename and content.
// The body is read once, into a buffer of its declared length, and the
// content decoded from it straight into its string.
func (js *Jobs) readJSONUpload(w http.ResponseWriter, r *http.Request) (string, string, *api.Error) {
	limit := js.cfg.MaxFileBytes
	body, aerr := readSized(w, r, bodyCap(jsonUpload, limit))
	if aerr != nil {
		return "", "", aerr
	}
	if !utf8.Valid(body) {
		return "", "", api.NewError(http.StatusBadRequest, "invalid_request_error", "invalid_json", "request body is not valid UTF-8")
	}
	// First the names and the start of each value, for the errors; then
	// the values, decoded from the body without a copy of it.
	var heads map[string]valueHead
	if err := json.Unmarshal(body, &heads); err != nil || heads == nil {
		if err == nil {
			err = errors.New("the body is null, want a JSON object")
		}
		return "", "", api.NewError(http.StatusBadRequest, "invalid_request_error", "invalid_json", "request body is not a JSON object: %v", err)
	}
	for k, h := range heads {
		if !slices.Contains(uploadFields, k) {
			return "", "", api.BadParam(k, "unknown_parameter", "unknown parameter %q: a JSON upload has %s", k, strings.Join(uploadFields, ", "))
		}
		if kind := api.Kind(json.RawMessage(h)); kind != "a string" && kind != "null" {
			return "", "", api.WrongType(k, "a string", json.RawMessage(h))
		}
	}
	var u struct{ Purpose, Filename, Content *string }
	if err := json.Unmarshal(body, &u); err != nil {
		return "", "", api.NewError(http.StatusBadRequest, "invalid_request_error", "invalid_json", "request body is not a JSON object: %v", err)
	}
	purpose, name := deref(u.Purpose), deref(u.Filename)
	if aerr := checkPurpose(purpose); aerr != nil {
		return "", "", aerr
	}
	if u.Content == nil {
		return "", "", api.BadParam("content", "missing_parameter", "content is required: the training text")
	}
	if int64(len(*u.Content)) > limit {
		return "", "", fileTooLarge("content", limit)
	}
	if aerr := checkFilename("filename", "filename", name); aerr != nil {
		return "", "", aerr
	}
	if name == "" {
		name = "upload.txt"
	}
	return cleanFilename(name), *u.Content, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// valueHead is the first bytes of a JSON value, enough to name its type
// and show it in a message, decoded without copying the rest.
type valueHead []byte

func (h *valueHead) UnmarshalJSON(b []byte) error {
	*h = append((*h)[:0], b[:min(len(b), 48)]...)
	return nil
}

// readSized reads a body of at most limit bytes into a buffer of its
// declared length, so that a large one is not copied as it grows.
func readSized(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *api.Error) {
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(min(r.ContentLength, limit)) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit)); err != nil {
		return nil, api.BodyError(err)
	}
	return buf.Bytes(), nil
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

// A file's name is only ever shown back, but it is bounded: as given (a
// path, perhaps) and its last element, as file systems bound one.
const (
	maxFilenameBytes = 4096
	maxBaseBytes     = 255
)

// checkFilename refuses a file name with a control character (NUL
// included: the multipart parser refuses one in a part's header) or
// longer than the bounds, naming param; what is the name in the message.
func checkFilename(param, what, name string) *api.Error {
	at := 0
	for _, c := range name {
		if unicode.IsControl(c) {
			return api.BadParam(param, "invalid_value", "%s holds the control character %U %s: a file name has none", what, c, textpos.At(name, at))
		}
		at++
	}
	base := name[strings.LastIndexAny(name, `/\`)+1:]
	if len(name) > maxFilenameBytes || len(base) > maxBaseBytes {
		return api.BadParam(param, "invalid_value", "%s has %d bytes (%d after its last slash): a file name has at most %d (%d after its last slash)", what, len(name), len(base), maxFilenameBytes, maxBaseBytes)
	}
	return nil
}

// cleanFilename keeps a file name's last path element, in valid UTF-8.
func cleanFilename(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.ToValidUTF8(name, "?")
	if name == "" {
		name = "upload"
	}
	return name
}

// trainingText returns the text a file trains on: the file without a
// leading byte-order mark (a part of raw, not a copy), or for OpenAI's
// legacy JSONL ({"prompt", "completion"} per line; a file named .jsonl, or
// whose first line is such an object) every line's prompt and
// completion, concatenated in order.
func trainingText(raw, name string) (string, bool, *api.Error) {
	raw = strings.TrimPrefix(raw, "\uFEFF")
	if !utf8.ValidString(raw) {
		off := 0
		for off < len(raw) {
			r, n := utf8.DecodeRuneInString(raw[off:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			off += n
		}
		return "", false, api.BadParam("file", "invalid_text", "the file is not valid UTF-8: byte offset %d (line %d)", off, strings.Count(raw[:off], "\n")+1)
	}
	if len(strings.TrimSpace(raw)) == 0 {
		return "", false, api.BadParam("file", "invalid_text", "the file is empty: there is nothing to learn from")
	}
	if !isJSONL(raw, name) {
		return raw, false, nil
	}
	var text strings.Builder
	i := -1
	for line := range strings.Lines(raw) {
		i++
		line = strings.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var rec map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
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
func isJSONL(raw, name string) bool {
	if strings.HasSuffix(strings.ToLower(name), ".jsonl") {
		return true
	}
	first, _, _ := strings.Cut(strings.TrimLeft(raw, " \t\r\n"), "\n")
	var rec map[string]json.RawMessage
	return len(first) > 0 && first[0] == '{' && json.Unmarshal([]byte(strings.TrimSpace(first)), &rec) == nil
}
