package mock_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"gw/perf/mock"
)

func TestModels(t *testing.T) {
	_, base := startMock(t, mock.Config{Models: []string{"gpt-4o", "o3"}})
	c := newClient()
	for _, path := range []string{"/v1/models", "/openai/v1/models"} {
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %s", path, err)
		}
		b, _ := readAll(resp)
		var list struct {
			Object string `json:"object"`
			Data   []struct {
				ID      string `json:"id"`
				Object  string `json:"object"`
				Created int64  `json:"created"`
				OwnedBy string `json:"owned_by"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &list); err != nil {
			t.Fatalf("cannot decode %s: %s", b, err)
		}
		if list.Object != "list" || len(list.Data) != 2 || list.Data[0].ID != "gpt-4o" || list.Data[1].ID != "o3" ||
			list.Data[0].Object != "model" || list.Data[0].Created == 0 || list.Data[0].OwnedBy == "" {
			t.Fatalf("unexpected list %s", b)
		}
	}
	resp, err := c.Get(base + "/v1/models/ft:gpt-4o:org/x")
	if err != nil {
		t.Fatalf("GET model: %s", err)
	}
	b, _ := readAll(resp)
	if m := object(t, string(b)); m["id"] != "ft:gpt-4o:org/x" || m["object"] != "model" {
		t.Fatalf("unexpected model %s", b)
	}
}

func TestUnknownRoutes(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	f := func(method, path string, wantStatus int) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(chatBody))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %s", method, path, err)
		}
		b, _ := readAll(resp)
		var e openAIError
		if resp.StatusCode != wantStatus || json.Unmarshal(b, &e) != nil || e.Error.Message == "" {
			t.Fatalf("%s %s: got %d %s; want %d with an OpenAI envelope", method, path, resp.StatusCode, b, wantStatus)
		}
	}
	f(http.MethodPost, "/v1/files", 404)
	f(http.MethodGet, "/v1/chat/completions", 405)
	f(http.MethodPost, "/v1/models", 405)
}

func TestRecording(t *testing.T) {
	s, base := startMock(t, mock.Config{RecordLimit: 3})
	c := newClient()
	for i := range 5 {
		resp := post(t, c, base+"/v1/chat/completions?api-version="+string(rune('a'+i)), chatBody, "x-trace", string(rune('a'+i)))
		readAll(resp)
	}
	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("got %d recorded requests; want the last 3", len(reqs))
	}
	for i, r := range reqs {
		want := string(rune('c' + i))
		if r.Seq != uint64(3+i) || r.Method != "POST" || r.Path != "/v1/chat/completions" || r.Query != "api-version="+want ||
			r.Header.Get("X-Trace") != want || r.Header.Get("Authorization") != "Bearer sk-test" || r.Body != chatBody {
			t.Fatalf("request %d: got %+v", i, r)
		}
	}

	// Over HTTP; inspection requests are neither recorded nor counted.
	resp, err := c.Get(base + "/_mock/requests")
	if err != nil {
		t.Fatalf("GET /_mock/requests: %s", err)
	}
	b, _ := readAll(resp)
	var got []mock.RecordedRequest
	if err := json.Unmarshal(b, &got); err != nil || len(got) != 3 || got[2].Body != chatBody || got[2].Header.Get("X-Trace") != "e" {
		t.Fatalf("GET /_mock/requests: got %s (%v)", b, err)
	}
	req, _ := http.NewRequest(http.MethodDelete, base+"/_mock/requests", nil)
	if resp, err := c.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE /_mock/requests: %v %v", resp, err)
	}
	if n := len(s.Requests()); n != 0 {
		t.Fatalf("got %d requests after DELETE; want 0", n)
	}
	resp, _ = c.Get(base + "/_mock/requests")
	if b, _ := readAll(resp); strings.TrimSpace(string(b)) != "[]" {
		t.Fatalf("got %s after DELETE; want []", b)
	}
	if st := s.Stats(); st.Requests != 5 {
		t.Fatalf("got %d requests counted; want 5", st.Requests)
	}

	// Disabled recording.
	s2, base2 := startMock(t, mock.Config{RecordLimit: -1})
	readAll(post(t, c, base2+"/v1/chat/completions", chatBody))
	if reqs := s2.Requests(); reqs != nil {
		t.Fatalf("got %d recorded requests with recording off", len(reqs))
	}
}

func TestCompressedBody(t *testing.T) {
	s, base := startMock(t, mock.Config{})
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(streamBody))
	zw.Close()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", &buf)
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := newClient().Do(req)
	if err != nil {
		t.Fatalf("POST: %s", err)
	}
	b, err := readAll(resp)
	if err != nil || !bytes.HasSuffix(b, []byte("data: [DONE]\n\n")) {
		t.Fatalf("got %d %s (%v); want a stream", resp.StatusCode, b, err)
	}
	if st := s.Stats(); st.Streams != 1 {
		t.Fatalf("got %d streams; want 1", st.Streams)
	}
}

func TestStats(t *testing.T) {
	s, base := startMock(t, mock.Config{})
	c := newClient()
	resp := post(t, c, base+"/v1/chat/completions", streamBody, "x-mock-stall-after", "0", "x-mock-stall-for", "1h")
	waitFor(t, func() bool { return s.Stats().InFlight == 1 }, "the stalled stream to be in flight")
	readAll(post(t, c, base+"/v1/chat/completions", chatBody, "x-mock-status", "500"))

	r, err := c.Get(base + "/_mock/stats")
	if err != nil {
		t.Fatalf("GET /_mock/stats: %s", err)
	}
	b, _ := readAll(r)
	var st mock.Stats
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("cannot decode %s: %s", b, err)
	}
	want := mock.Stats{Requests: 2, InFlight: 1, Streams: 1, Errors: 1}
	if st != want {
		t.Fatalf("got %+v; want %+v", st, want)
	}
	resp.Body.Close()

	req, _ := http.NewRequest(http.MethodDelete, base+"/_mock/stats", nil)
	if r, err := c.Do(req); err != nil || r.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE /_mock/stats: %v %v", r, err)
	}
	if st := s.Stats(); st.Requests != 0 || st.Errors != 0 || st.Streams != 0 {
		t.Fatalf("got %+v after reset", st)
	}
}

// TestShutdownEndsStalls checks that Shutdown does not wait for stalls and delays.
func TestShutdownEndsStalls(t *testing.T) {
	s, base := startMock(t, mock.Config{})
	c := newClient()
	resp := post(t, c, base+"/v1/chat/completions", streamBody, "x-mock-stall-after", "1", "x-mock-stall-for", "1h")
	defer resp.Body.Close()
	waitFor(t, func() bool { return s.Stats().InFlight == 1 }, "the stalled stream")
	start := time.Now()
	if err := s.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %s", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Shutdown took %s", d)
	}
	if st := s.Stats(); st.InFlight != 0 {
		t.Fatalf("got %d in flight after Shutdown", st.InFlight)
	}
}

// TestShutdownBeforeServe checks that Serve returns when Shutdown won the race.
func TestShutdownBeforeServe(t *testing.T) {
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("cannot listen: %s", err)
		}
		s := mock.New(mock.Config{})
		served := make(chan error, 1)
		go func() { served <- s.Serve(ln) }()
		if err := s.Shutdown(); err != nil {
			t.Fatalf("Shutdown: %s", err)
		}
		select {
		case err := <-served:
			if err != nil {
				t.Fatalf("Serve: %s", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Serve did not return")
		}
	}
}
