package finetune

// The training files: uploads in both shapes, the text a file trains on,
// listing, content, deletion, every refusal and the cross-site door.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestUploadShapesAndText(t *testing.T) {
	_, ts := newTrainingServer(t, nil)
	for _, tc := range []struct {
		name, filename, content string
		format, text            string
	}{
		{"text", "notes.txt", "the lamp keeper\nwalks", "text", "the lamp keeper\nwalks"},
		{"byte-order mark", "bom.txt", "\uFEFFthe lamp", "text", "the lamp"},
		{"jsonl by name", "data.jsonl", `{"prompt":"the ","completion":"lamp"}` + "\n\n" + `{"prompt":"a ","completion":"gull"}` + "\n", "jsonl", "the lampa gull"},
		{"jsonl by its first line", "data", `{"prompt":"x","completion":"y"}` + "\r\n" + `{"completion":"z"}`, "jsonl", "xyz"},
		{"text that starts with a brace", "brace.txt", "{not json} the lamp", "text", "{not json} the lamp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := upload(t, ts, "fine-tune", tc.filename, tc.content)
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			f := r.json(t)
			if !strings.HasPrefix(f["id"].(string), "file-") || f["object"] != "file" || f["purpose"] != "fine-tune" ||
				f["filename"] != tc.filename || f["bytes"] != float64(len(tc.content)-strings.Count(tc.content, "\uFEFF")*3) ||
				f["status"] != "processed" || f["format"] != tc.format || f["characters"] != float64(len([]rune(tc.text))) {
				t.Errorf("file object %v", f)
			}
			// The job's text is what the file trains on: its first
			// character is the samples' prompt.
			id := f["id"].(string)
			s := do(t, "GET", ts.URL+"/v1/files/"+id, "").json(t)
			if s["id"] != id {
				t.Errorf("retrieve: %v", s)
			}
			c := do(t, "GET", ts.URL+"/v1/files/"+id+"/content", "")
			want := strings.TrimPrefix(tc.content, "\uFEFF")
			if c.status != 200 || string(c.body) != want || c.header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("content: %d %q, want %q", c.status, c.body, want)
			}
		})
	}
	// JSON upload, the playground's shape.
	body, _ := json.Marshal(map[string]string{"purpose": "fine-tune", "filename": "dir/p.txt", "content": "the gull"})
	f := do(t, "POST", ts.URL+"/v1/files", string(body)).json(t)
	if f["filename"] != "p.txt" || f["characters"] != 8.0 {
		t.Errorf("JSON upload: %v", f)
	}
}

func TestFileListsAndDeletes(t *testing.T) {
	_, ts := newTrainingServer(t, func(c *testConfig) { c.MaxFiles = 3 })
	var ids []string
	for i := range 3 {
		ids = append(ids, uploadID(t, ts, fmt.Sprintf("text %d", i)))
	}
	list := func(q string) (got []string, more bool) {
		var l struct {
			Object  string `json:"object"`
			Data    []struct{ ID string }
			HasMore bool `json:"has_more"`
		}
		r := do(t, "GET", ts.URL+"/v1/files"+q, "")
		if r.status != 200 || json.Unmarshal(r.body, &l) != nil || l.Object != "list" {
			t.Fatalf("list%s: %d %s", q, r.status, r.body)
		}
		for _, d := range l.Data {
			got = append(got, d.ID)
		}
		return got, l.HasMore
	}
	want := []string{ids[2], ids[1], ids[0], builtinFileID} // newest first
	if got, more := list(""); strings.Join(got, ",") != strings.Join(want, ",") || more {
		t.Errorf("list: %v %v, want %v", got, more, want)
	}
	if got, more := list("?limit=2"); strings.Join(got, ",") != strings.Join(want[:2], ",") || !more {
		t.Errorf("limit 2: %v %v", got, more)
	}
	if got, more := list("?limit=2&after=" + ids[1]); strings.Join(got, ",") != strings.Join(want[2:], ",") || more {
		t.Errorf("after: %v %v", got, more)
	}
	if got, _ := list("?order=asc"); got[0] != builtinFileID {
		t.Errorf("asc: %v", got)
	}
	if got, _ := list("?purpose=assistants"); len(got) != 0 {
		t.Errorf("purpose assistants: %v", got)
	}
	// Full: a fourth upload is refused until one is deleted.
	r := do(t, "POST", ts.URL+"/v1/files", `{"purpose":"fine-tune","content":"more"}`)
	if e := r.apiError(t); r.status != 429 || *e.Error.Code != "too_many_files" || !strings.Contains(e.Error.Message, "DELETE /v1/files/{file}") {
		t.Errorf("fourth upload: %d %s", r.status, r.body)
	}
	d := do(t, "DELETE", ts.URL+"/v1/files/"+ids[0], "").json(t)
	if d["id"] != ids[0] || d["deleted"] != true || d["object"] != "file" {
		t.Errorf("delete: %v", d)
	}
	for _, path := range []string{"/v1/files/" + ids[0], "/v1/files/" + ids[0] + "/content"} {
		if r := do(t, "GET", ts.URL+path, ""); r.status != 404 || *r.apiError(t).Error.Code != "file_not_found" {
			t.Errorf("GET %s after delete: %d %s", path, r.status, r.body)
		}
	}
	if r := do(t, "DELETE", ts.URL+"/v1/files/"+ids[0], ""); r.status != 404 {
		t.Errorf("second delete: %d", r.status)
	}
	if r := do(t, "DELETE", ts.URL+"/v1/files/"+builtinFileID, ""); r.status != 403 {
		t.Errorf("delete the built-in file: %d %s", r.status, r.body)
	}
	uploadID(t, ts, "room again")
	for q, param := range map[string]string{"?limit=0": "limit", "?limit=x": "limit", "?order=up": "order", "?page=2": "page"} {
		r := do(t, "GET", ts.URL+"/v1/files"+q, "")
		if e := r.apiError(t); r.status != 400 || e.Error.Param == nil || *e.Error.Param != param {
			t.Errorf("list%s: %d %s", q, r.status, r.body)
		}
	}
	// The built-in text is Lantern Bay.
	c := do(t, "GET", ts.URL+"/v1/files/"+builtinFileID+"/content", "")
	if !strings.HasPrefix(string(c.body), "the ") || len(c.body) != 10020 {
		t.Errorf("built-in content: %d bytes %.20q", len(c.body), c.body)
	}
}

func TestUploadRefusals(t *testing.T) {
	_, ts := newTrainingServer(t, func(c *testConfig) { c.MaxFileBytes = 100 })
	for _, tc := range []struct {
		name                       string
		purpose, filename, content string
		status                     int
		param, code, message       string
	}{
		{"purpose", "assistants", "a.txt", "the lamp", 400, "purpose", "invalid_value", `purpose "assistants" is not supported`},
		{"no purpose", "", "a.txt", "the lamp", 400, "purpose", "invalid_value", `purpose ""`},
		{"no file", "fine-tune", "", "", 400, "file", "missing_parameter", "file is required"},
		{"too large", "fine-tune", "a.txt", strings.Repeat("a", 101), 400, "file", "file_too_large", "the file is larger than this server's limit of 100 bytes"},
		{"not UTF-8", "fine-tune", "a.txt", "the\nla\xffmp", 400, "file", "invalid_text", "byte offset 6 (line 2)"},
		{"empty", "fine-tune", "a.txt", " \n", 400, "file", "invalid_text", "empty"},
		{"bad JSONL line", "fine-tune", "a.jsonl", `{"prompt":"a"}` + "\n" + `nope`, 400, "file", "invalid_jsonl", "line 2 is not a JSON object"},
		{"chat JSONL", "fine-tune", "a.jsonl", `{"messages":[]}`, 400, "file", "invalid_jsonl", "chat format"},
		{"JSONL field", "fine-tune", "a.jsonl", `{"prompt":"a","weight":1}`, 400, "file", "invalid_jsonl", `unknown field "weight"`},
		{"JSONL type", "fine-tune", "a.jsonl", `{"prompt":1}`, 400, "file", "invalid_jsonl", "prompt must be a string"},
		{"JSONL empty", "fine-tune", "a.jsonl", `{"prompt":""}`, 400, "file", "invalid_jsonl", "all empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := upload(t, ts, tc.purpose, tc.filename, tc.content)
			e := r.apiError(t)
			if r.status != tc.status || !strings.Contains(e.Error.Message, tc.message) || e.Error.Code == nil || *e.Error.Code != tc.code ||
				(tc.param != "") != (e.Error.Param != nil) || (e.Error.Param != nil && *e.Error.Param != tc.param) {
				t.Errorf("%d %s; want %d param %q code %q %q", r.status, r.body, tc.status, tc.param, tc.code, tc.message)
			}
		})
	}
	// JSON uploads.
	for body, want := range map[string]string{
		`{"purpose":"fine-tune"}`:                                              "content is required",
		`{"purpose":"fine-tune","content":"a","extra":1}`:                      `unknown parameter "extra"`,
		`{"purpose":"fine-tune","content":3}`:                                  "content must be a string",
		`{"purpose":"batch","content":"the lamp"}`:                             `purpose "batch"`,
		`{"purpose":"fine-tune","content":"` + strings.Repeat("b", 101) + `"}`: "the content is larger than this server's limit of 100 bytes",
	} {
		r := do(t, "POST", ts.URL+"/v1/files", body)
		if r.status/100 != 4 || !strings.Contains(r.apiError(t).Error.Message, want) {
			t.Errorf("%.60s: %d %s, want %q", body, r.status, r.body, want)
		}
	}
	// Another body type is 415; a form field the upload does not have is
	// named.
	req, _ := http.NewRequest("POST", ts.URL+"/v1/files", strings.NewReader("the lamp"))
	req.Header.Set("Content-Type", "text/plain")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 415 {
		t.Errorf("text/plain: %v %v", resp.StatusCode, err)
	}
}

// TestUploadCrossSite: a page on another site can post a multipart form
// anywhere without a preflight, so such an upload is refused when its
// Origin is not this server (or the configured CORS origin); clients that
// are not browsers send no Origin.
func TestUploadCrossSite(t *testing.T) {
	_, ts := newTrainingServer(t, func(c *testConfig) { c.CORSOrigin = "https://app.example" })
	host := strings.TrimPrefix(ts.URL, "http://")
	for origin, status := range map[string]int{
		"":                     200,
		"http://" + host:       200,
		"https://app.example":  200,
		"https://evil.example": 403,
		"null":                 403,
	} {
		var h []string
		if origin != "" {
			h = []string{"Origin", origin}
		}
		r := upload(t, ts, "fine-tune", "a.txt", "the lamp", h...)
		if r.status != status {
			t.Errorf("Origin %q: %d %s, want %d", origin, r.status, r.body, status)
		}
		if status == 403 && *r.apiError(t).Error.Code != "cross_origin" {
			t.Errorf("Origin %q: %s", origin, r.body)
		}
	}
}

// TestTrainingOff: on a nil *Jobs (server.Config.Training nil) every
// route of the jobs API answers 404 training_disabled, saying how to turn
// it on.
func TestTrainingOff(t *testing.T) {
	var js *Jobs
	mux := http.NewServeMux()
	js.Routes(mux)
	ts := httptest.NewServer(mux)
	defer ts.Close()
	for _, rt := range [][2]string{
		{"POST", "/v1/files"}, {"GET", "/v1/files"}, {"GET", "/v1/files/file-lanternbay"},
		{"GET", "/v1/files/file-lanternbay/content"}, {"DELETE", "/v1/files/file-x"},
		{"POST", "/v1/fine_tuning/jobs"}, {"GET", "/v1/fine_tuning/jobs"}, {"GET", "/v1/fine_tuning/jobs/ftjob-x"},
		{"POST", "/v1/fine_tuning/jobs/ftjob-x/cancel"}, {"GET", "/v1/fine_tuning/jobs/ftjob-x/events"},
	} {
		r := do(t, rt[0], ts.URL+rt[1], `{}`)
		if e := r.apiError(t); r.status != 404 || *e.Error.Code != "training_disabled" || !strings.Contains(e.Error.Message, "-training") {
			t.Errorf("%s %s: %d %s", rt[0], rt[1], r.status, r.body)
		}
	}
}

func TestTrainingConfigRefused(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{MaxSteps: -1}, "MaxSteps is negative"},
		{Config{MaxSteps: 1<<63 - 1}, "MaxSteps: invalid config: training: steps 9223372036854775807 is more than 1073741824 (2^30)"},
		{Config{MaxJobs: 2, Queue: 4}, "MaxJobs 2 must hold"},
		{Config{Dir: "/nonexistent-minigpt-dir"}, "training directory"},
	} {
		if _, err := New(tc.c, &testHost{}, Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
}
