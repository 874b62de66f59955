package server

// The doors: every route with the key, CORS and preflights; the Host check;
// the Content-Type check.

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDoors sends every route, with no key, a wrong one and the right one
// (its scheme in either case), to a server with an API key, with and
// without a CORS origin, as a request and as a CORS preflight, and checks
// the status, Allow, the CORS headers and the authentication of each:
// every /v1/ path needs the key and carries the CORS headers (errors
// included), preflights to the API are answered without the key, and
// nothing else needs the key or gets CORS headers.
func TestDoors(t *testing.T) {
	const origin = "https://app.example"
	type route struct {
		method, path string
		status       int
		allow        string // the methods the path is served with; "" for a path no route serves
	}
	routes := []route{
		{"POST", "/v1/completions", 200, "POST"},
		{"GET", "/v1/completions", 405, "POST"},
		{"POST", "/v1/chat/completions", 400, "POST"},
		{"GET", "/v1/models", 200, "GET, HEAD"},
		{"HEAD", "/v1/models", 200, "GET, HEAD"},
		{"PUT", "/v1/models", 405, "GET, HEAD"},
		{"GET", "/v1/models/lanternbay", 200, "GET, HEAD"},
		{"HEAD", "/v1/models/lanternbay", 200, "GET, HEAD"},
		{"POST", "/v1/models/lanternbay", 405, "GET, HEAD"},
		{"GET", "/v1/models/gpt-4", 404, "GET, HEAD"},
		{"GET", "/v1/models/", 404, ""},
		{"GET", "/v1/models/lanternbay/x", 404, ""},
		{"GET", "/v1/engines", 404, ""},
		{"POST", "/v1/embeddings", 404, ""},
		{"GET", "/health", 200, "GET, HEAD"},
		{"DELETE", "/health", 405, "GET, HEAD"},
		{"GET", "/metrics", 200, "GET, HEAD"},
		{"POST", "/metrics", 405, "GET, HEAD"},
		{"GET", "/", 200, "GET, HEAD"},
		{"POST", "/", 405, "GET, HEAD"},
		{"GET", "/playground/app.js", 200, "GET, HEAD"},
		{"GET", "/playground/missing.js", 404, "GET, HEAD"},
		{"GET", "/nope", 404, ""},
	}
	keys := []struct {
		name, header string
		right        bool
	}{
		{"no key", "", false},
		{"wrong key", "Bearer nope", false},
		{"key without scheme", "k3y", false},
		{"Basic scheme", "Basic k3y", false},
		{"right key", "Bearer k3y", true},
		{"right key, scheme in lower case", "bearer  k3y", true},
	}
	servers := map[bool]*httptest.Server{}
	for _, cors := range []bool{false, true} {
		_, ts := newTestServer(t, func(c *Config) {
			c.APIKey = "k3y"
			if cors {
				c.CORSOrigin = origin
			}
		})
		servers[cors] = ts
	}
	for _, rt := range routes {
		api := strings.HasPrefix(rt.path, "/v1/")
		for _, key := range keys {
			for _, cors := range []bool{false, true} {
				for _, preflight := range []bool{false, true} {
					name := rt.method + " " + rt.path + ", " + key.name
					if cors {
						name += ", CORS"
					}
					method, header := rt.method, []string{"Origin", origin}
					if preflight {
						name += ", preflight"
						method = "OPTIONS"
						header = append(header, "Access-Control-Request-Method", rt.method, "Access-Control-Request-Headers", "authorization, content-type")
					}
					if key.header != "" {
						header = append(header, "Authorization", key.header)
					}
					// What the doors should do.
					status, allow := rt.status, ""
					if rt.status == 405 {
						allow = rt.allow
					}
					answered := false // a preflight the CORS door answers
					switch {
					case preflight && api && cors && rt.allow != "":
						status, allow, answered = 204, "", true
					case api && !key.right:
						status, allow = 401, ""
					case preflight && rt.allow != "":
						status, allow = 405, rt.allow
					case preflight:
						status = 404
					}
					body := ""
					if method == "POST" {
						body = `{"prompt":"the ","max_tokens":1}`
					}
					t.Run(name, func(t *testing.T) {
						r := do(t, method, servers[cors].URL+rt.path, body, header...)
						if r.status != status {
							t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
						}
						if got := r.header.Get("Allow"); got != allow {
							t.Errorf("Allow %q, want %q", got, allow)
						}
						acao := r.header.Get("Access-Control-Allow-Origin")
						switch {
						case api && cors && acao != origin:
							t.Errorf("Access-Control-Allow-Origin %q on an API response, want %q", acao, origin)
						case !(api && cors) && acao != "":
							t.Errorf("Access-Control-Allow-Origin %q, want none", acao)
						}
						acam := r.header.Get("Access-Control-Allow-Methods")
						switch {
						case answered && (acam != rt.allow || !strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "Authorization")):
							t.Errorf("preflight answer: Allow-Methods %q (want %q), Allow-Headers %q", acam, rt.allow, r.header.Get("Access-Control-Allow-Headers"))
						case !answered && acam != "":
							t.Errorf("Access-Control-Allow-Methods %q on a response that is no preflight answer", acam)
						}
						if (status == 401) != (r.header.Get("WWW-Authenticate") != "") {
							t.Errorf("status %d with WWW-Authenticate %q", status, r.header.Get("WWW-Authenticate"))
						}
						if status >= 400 && method != "HEAD" {
							e := r.apiError(t).Error
							if status == 401 && e.Type != "authentication_error" {
								t.Errorf("401 of type %q", e.Type)
							}
						}
					})
				}
			}
		}
	}
}

// TestLoopbackHosts: a request that arrives on loopback is answered only
// for a loopback Host or an allowed one (issue 26, defect 7: DNS
// rebinding); a request on any other address, or served without a
// connection, is not checked.
func TestLoopbackHosts(t *testing.T) {
	_, ts := newTestServer(t, func(c *Config) { c.AllowedHosts = []string{"Proxy.Example."} })
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(ts.URL, "http://"))
	for _, tc := range []struct {
		host   string
		status int
	}{
		{"127.0.0.1:" + port, 200},
		{"127.0.0.2", 200},
		{"localhost:" + port, 200},
		{"LocalHost", 200},
		{"localhost.", 200},
		{"app.localhost:" + port, 200},
		{"[::1]:" + port, 200},
		{"proxy.example", 200},
		{"PROXY.example:443", 200},
		{"attacker.example:" + port, 403},
		{"localhost.attacker.example", 403},
		{"evil-localhost", 403},
		{"10.0.0.1:" + port, 403},
		{"proxy.example.attacker.example", 403},
	} {
		for _, path := range []string{"/v1/models", "/health", "/"} {
			req, _ := http.NewRequest("GET", ts.URL+path, nil)
			req.Host = tc.host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("GET %s with Host %q: %d, want %d", path, tc.host, resp.StatusCode, tc.status)
			}
		}
	}
	r := do(t, "GET", ts.URL+"/v1/models", "", "Host", "attacker.example")
	if r.status != 403 || *r.apiError(t).Error.Code != "host_not_allowed" {
		t.Errorf("refusal: %d %s", r.status, r.body)
	}
	s, _ := newTestServer(t, nil)
	for _, local := range []net.Addr{nil, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 8080}} {
		req := httptest.NewRequest("GET", "/v1/models", nil)
		req.Host = "attacker.example"
		if local != nil {
			req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, local))
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != 200 {
			t.Errorf("request on %v for attacker.example: %d", local, w.Code)
		}
	}
	m, v := lanternBay()
	if _, err := New(Config{Models: []Model{{Name: "m", Model: m, Vocab: v}}, AllowedHosts: []string{"proxy.example:8080"}}); err == nil {
		t.Error("New accepted an allowed host with a port")
	}
}

// TestPostNeedsJSON: a POST body must say it is JSON (issue 26, defect 7:
// a web page can send text/plain or a form to any server without a CORS
// preflight).
func TestPostNeedsJSON(t *testing.T) {
	_, ts := newTestServer(t, nil)
	for _, tc := range []struct {
		ct     string
		status int
	}{
		{"", 415},
		{"text/plain", 415},
		{"text/plain;charset=UTF-8", 415},
		{"application/x-www-form-urlencoded", 415},
		{"multipart/form-data; boundary=x", 415},
		{"application/json-seq", 415},
		{"application/json;;", 415},
		{"application/json", 200},
		{"application/json; charset=utf-8", 200},
		{"Application/JSON", 200},
	} {
		for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
			body := `{"prompt":"the ","max_tokens":1}`
			if path == "/v1/chat/completions" {
				body = `{"messages":[{"role":"user","content":"the "}],"max_tokens":1}`
			}
			req, _ := http.NewRequest("POST", ts.URL+path, strings.NewReader(body))
			if tc.ct != "" {
				req.Header.Set("Content-Type", tc.ct)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("POST %s with Content-Type %q: %d, want %d", path, tc.ct, resp.StatusCode, tc.status)
			}
		}
	}
	r := do(t, "POST", ts.URL+"/v1/completions", `{"prompt":"the "}`, "Content-Type", "text/plain")
	if e := r.apiError(t).Error; *e.Code != "unsupported_media_type" || !strings.Contains(e.Message, "application/json") {
		t.Errorf("415: %+v", e)
	}
}
