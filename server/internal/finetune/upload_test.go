package finetune

// Uploads' memory: what reading one allocates against what it is
// charged, and the refusals that come before a byte of the body is read
// (a declared length above the cap, MaxFiles, the uploads' budget); file
// names.

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// multipartBody is an upload form holding content as the file filename.
func multipartBody(filename, content string) (string, []byte) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	mw.WriteField("purpose", "fine-tune")
	fw, _ := mw.CreateFormFile("file", filename)
	fw.Write([]byte(content))
	mw.Close()
	return mw.FormDataContentType(), b.Bytes()
}

// jsonBody is a JSON upload of content.
func jsonBody(filename, content string) []byte {
	b, _ := json.Marshal(map[string]string{"purpose": "fine-tune", "filename": filename, "content": content})
	return b
}

// TestUploadMemory: reading an upload allocates no more than it is
// charged before its body is read (uploadCost of its declared length),
// in either shape, for plain text and JSONL, and for JSON whose content
// is all escapes (each newline two bytes of body). It reports the bytes
// allocated per byte of body, the figures upload.go's constants cite.
func TestUploadMemory(t *testing.T) {
	s, _ := newTrainingServer(t, func(c *testConfig) { c.MaxFileBytes = 4 << 20; c.MaxBodyBytes = 1 << 20 })
	text := strings.Repeat("the lamp keeper walks the harbour wall.\n", 1<<20/40) // 1 MiB
	var jsonl strings.Builder
	for jsonl.Len() < 1<<20 {
		jsonl.WriteString(`{"prompt":"the lamp keeper ","completion":"walks the wall."}` + "\n")
	}
	quotes := strings.Repeat(`"`, 1<<20) // each two bytes of JSON
	for _, tc := range []struct {
		name    string
		shape   uploadShape
		file    string
		content string
	}{
		{"form, text", multipartUpload, "t.txt", text},
		{"form, JSONL", multipartUpload, "t.jsonl", jsonl.String()},
		{"JSON, text", jsonUpload, "t.txt", text},
		{"JSON, JSONL", jsonUpload, "t.jsonl", jsonl.String()},
		{"JSON, all escapes", jsonUpload, "t.txt", quotes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct, body := "application/json", jsonBody(tc.file, tc.content)
			if tc.shape == multipartUpload {
				ct, body = multipartBody(tc.file, tc.content)
			}
			r := httptest.NewRequest("POST", "/v1/files", bytes.NewReader(body))
			r.Header.Set("Content-Type", ct)
			w := httptest.NewRecorder()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			s.servePostFile(w, r)
			runtime.ReadMemStats(&after)
			if w.Code != 200 {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
			alloc := int64(after.TotalAlloc - before.TotalAlloc)
			charge := uploadCost(tc.shape, int64(len(body)))
			t.Logf("%s: %d bytes of body, %d allocated (%.2f a byte), charged %d", tc.name, len(body), alloc, float64(alloc)/float64(len(body)), charge)
			if strings.HasSuffix(tc.file, ".jsonl") {
				// Decoding a JSONL file line by line makes garbage as it
				// goes (about 20 bytes a byte, collected as it is made);
				// what it holds at once is the file and its text.
				runtime.GC()
				runtime.ReadMemStats(&after)
				if live := int64(after.HeapAlloc) - int64(before.HeapAlloc); live > charge {
					t.Errorf("the upload holds %d bytes, more than the %d it is charged", live, charge)
				}
				return
			}
			if alloc > charge {
				t.Errorf("reading the upload allocated %d bytes, more than the %d it is charged", alloc, charge)
			}
		})
	}
}

// countingBody is a request body that counts what is read of it, and
// blocks, when gate is not nil, until gate is closed; answered, when set,
// is called at its first read and reports whether the response was
// already written then.
type countingBody struct {
	r        io.Reader
	n        int
	gate     chan struct{}
	answered func() bool
	before   bool // the response was written before the first read
	mu       sync.Mutex
}

func (b *countingBody) Read(p []byte) (int, error) {
	if b.gate != nil {
		<-b.gate
	}
	b.mu.Lock()
	if b.n == 0 && b.answered != nil {
		b.before = b.answered()
	}
	b.mu.Unlock()
	n, err := b.r.Read(p)
	b.mu.Lock()
	b.n += n
	b.mu.Unlock()
	return n, err
}

func (b *countingBody) read() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

// uploadCounted posts body through the routes (as a client whose body
// is counted) and returns the answer.
func uploadCounted(s *testServer, ct string, body *countingBody, length int64) *httptest.ResponseRecorder {
	mux := http.NewServeMux()
	s.Routes(mux)
	r := httptest.NewRequest("POST", "/v1/files", body)
	r.ContentLength = length
	r.Header.Set("Content-Type", ct)
	w := httptest.NewRecorder()
	body.answered = func() bool { return w.Body.Len() > 0 }
	mux.ServeHTTP(w, r)
	return w
}

// TestUploadRefusedBeforeReading: an upload whose declared length is
// above its shape's cap gets 413, one beyond MaxFiles (counting those
// being uploaded) 429, and one the uploads' memory budget has no room
// for 429 with Retry-After, all answered before a byte of its body is
// read (then read into nothing, so that the client reads the answer);
// once the uploads in progress end, the next is admitted.
func TestUploadRefusedBeforeReading(t *testing.T) {
	s, _ := newTrainingServer(t, func(c *testConfig) { c.MaxFileBytes = 1000; c.MaxFiles = 4 })
	ct, form := multipartBody("a.txt", "the lamp")
	refused := func(name, ct string, body []byte, length int64, status int, code string) {
		t.Helper()
		b := &countingBody{r: bytes.NewReader(body)}
		w := uploadCounted(s, ct, b, length)
		var e errorJSON
		json.Unmarshal(w.Body.Bytes(), &e)
		if w.Code != status || e.Error.Code == nil || *e.Error.Code != code || (b.read() > 0 && !b.before) {
			t.Errorf("%s: %d %s; want %d %s, answered before a byte of the body is read (the body, %d bytes, was read after the answer: %v)", name, w.Code, w.Body, status, code, b.read(), b.before)
		}
		if status == 429 && w.Header().Get("Retry-After") == "" {
			t.Errorf("%s: 429 without Retry-After", name)
		}
	}
	big := bytes.Repeat([]byte("a"), 1000+64<<10+1)
	refused("JSON over its cap", "application/json", big[:2*1000+4<<10+1], 2*1000+4<<10+1, 413, "request_too_large")
	refused("a form over its cap", ct, big, int64(len(big)), 413, "request_too_large")

	// As many uploads as the budget holds, whose bodies have not arrived
	// (each is charged for its declared length): one more is refused.
	budget, charge := s.uploadBudget(), uploadCost(multipartUpload, int64(len(form)))
	held := make([]*countingBody, budget/charge)
	if len(held) < 1 || len(held)+2 > 4 {
		t.Fatalf("the budget of %d holds %d uploads of %d: this test wants 1 or 2", budget, len(held), charge)
	}
	var wg sync.WaitGroup
	for i := range held {
		b := &countingBody{r: bytes.NewReader(form), gate: make(chan struct{})}
		held[i] = b
		wg.Go(func() {
			if w := uploadCounted(s, ct, b, int64(len(form))); w.Code != 200 {
				t.Errorf("a held upload: %d %s", w.Code, w.Body)
			}
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		n := s.uploading
		s.mu.Unlock()
		if n == len(held) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d uploads admitted of %d", n, len(held))
		}
		time.Sleep(time.Millisecond)
	}
	refused("one more upload at once", ct, form, int64(len(form)), 429, "uploads_busy")
	for _, b := range held {
		close(b.gate)
	}
	wg.Wait()
	// With the files kept and those being read at MaxFiles (4), one more
	// is too many.
	for range 4 - len(held) {
		if w := uploadCounted(s, ct, &countingBody{r: bytes.NewReader(form)}, int64(len(form))); w.Code != 200 {
			t.Fatalf("an upload after the others ended: %d %s", w.Code, w.Body)
		}
	}
	refused("a file beyond MaxFiles", ct, form, int64(len(form)), 429, "too_many_files")
}

// TestUploadFilenames: a file name with a control character (NUL
// included) or too long is refused in both shapes, naming the field; a
// path keeps its last element.
func TestUploadFilenames(t *testing.T) {
	_, ts := newTrainingServer(t, nil)
	for _, tc := range []struct {
		name, want string
	}{
		{"a\x00b.txt", "holds the control character U+0000 at character 1 (counting from 0)"},
		{"a\tb.txt", "holds the control character U+0009 at character 1 (counting from 0)"},
		{strings.Repeat("a", 256), "has 256 bytes (256 after its last slash): a file name has at most 4096 (255 after its last slash)"},
		{strings.Repeat("d/", 2100) + "a.txt", "a file name has at most 4096"},
	} {
		r := do(t, "POST", ts.URL+"/v1/files", string(jsonBody(tc.name, "the lamp")))
		if e := r.apiError(t); r.status != 400 || *e.Error.Param != "filename" || !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("JSON %.40q: %d %s, want %q", tc.name, r.status, r.body, tc.want)
		}
	}
	// The multipart parser refuses a NUL in a part's header itself.
	if r := upload(t, ts, "fine-tune", "a\x00b.txt", "the lamp"); r.status != 400 {
		t.Errorf("a form's file name with NUL: %d %s", r.status, r.body)
	}
	if r := upload(t, ts, "fine-tune", strings.Repeat("a", 256), "the lamp"); r.status != 400 || *r.apiError(t).Error.Param != "file" || !strings.Contains(string(r.body), "255 after its last slash") {
		t.Errorf("a form's long file name: %d %s", r.status, r.body)
	}
	for given, kept := range map[string]string{"dir/p.txt": "p.txt", `C:\Users\me\p.txt`: "p.txt", strings.Repeat("a", 255): strings.Repeat("a", 255)} {
		if f := do(t, "POST", ts.URL+"/v1/files", string(jsonBody(given, "the lamp"))).json(t); f["filename"] != kept {
			t.Errorf("filename %.40q kept as %v, want %q", given, f["filename"], kept)
		}
	}
}
