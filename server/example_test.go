package server_test

// The package example: mounting the server and asking for a completion.

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"example.org/minigpt"
	"example.org/minigpt/server"
)

// Mount the server under a prefix in a program's own mux and ask for a
// greedy completion, as any OpenAI client would.
func Example() {
	m, vocab, err := minigpt.DefaultModel()
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(server.Config{Models: []server.Model{{Name: "lanternbay", Model: m, Vocab: vocab}}})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/minigpt/", http.StripPrefix("/minigpt", srv))
	ts := httptest.NewServer(mux)
	defer ts.Close()

	resp, err := http.Post(ts.URL+"/minigpt/v1/completions", "application/json",
		strings.NewReader(`{"model":"lanternbay","prompt":"the keeper ","max_tokens":30,"temperature":0}`))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Status)
	fmt.Printf("%q %s\n", c.Choices[0].Text, c.Choices[0].FinishReason)
	// Output:
	// 200 OK
	// "rings the bell when a boat dri" length
}
