package mock_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"gw/perf/mock"
)

func TestKnobStatus(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	f := func(body string, header []string, wantStatus int, wantRetryAfter, wantBody, wantType string) {
		t.Helper()
		resp := post(t, c, base+"/v1/chat/completions", body, header...)
		b, err := readAll(resp)
		if err != nil {
			t.Fatalf("%v: cannot read body: %s", header, err)
		}
		if resp.StatusCode != wantStatus {
			t.Fatalf("%v: got status %d; want %d", header, resp.StatusCode, wantStatus)
		}
		if got := resp.Header.Get("Retry-After"); got != wantRetryAfter {
			t.Fatalf("%v: got Retry-After %q; want %q", header, got, wantRetryAfter)
		}
		if wantType == "" {
			if string(b) != wantBody {
				t.Fatalf("%v: got body %q; want %q", header, b, wantBody)
			}
			return
		}
		var e openAIError
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%v: body %s is not an OpenAI error envelope: %s", header, b, err)
		}
		if e.Error.Type != wantType || e.Error.Message == "" || e.Error.Param != nil {
			t.Fatalf("%v: got %+v; want type %q", header, e.Error, wantType)
		}
		m := object(t, string(b))["error"].(map[string]any)
		for _, key := range []string{"message", "type", "param", "code"} {
			if _, ok := m[key]; !ok {
				t.Fatalf("%v: envelope has no %q: %s", header, key, b)
			}
		}
	}
	f(chatBody, []string{"x-mock-status", "429", "x-mock-retry-after", "3"}, 429, "3", "", "requests")
	f(streamBody, []string{"x-mock-status", "503"}, 503, "", "", "server_error")
	f(chatBody, []string{"x-mock-status", "400"}, 400, "", "", "invalid_request_error")
	f(chatBody, []string{"x-mock-status", "502", "x-mock-error-body", "<html>bad gateway</html>"}, 502, "", "<html>bad gateway</html>", "")
	f(chatBody, []string{"x-mock-status", "500", "x-mock-error-body", "empty", "x-mock-retry-after", "1"}, 500, "1", "", "")
	f(chatBody, []string{"x-mock-error-body", `{"error":"raw"}`}, 500, "", `{"error":"raw"}`, "")
	// The error goes out before the body is read: even a bad body gets the injected status.
	f(`garbage`, []string{"x-mock-status", "401"}, 401, "", "", "invalid_request_error")
	// status 200 is a normal answer.
	resp := post(t, c, base+"/v1/chat/completions", chatBody, "x-mock-status", "200")
	if b, _ := readAll(resp); resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"chat.completion"`)) {
		t.Fatalf("status=200: got %d %s; want a normal answer", resp.StatusCode, b)
	}
}

func TestKnobFailAfter(t *testing.T) {
	s, base := startMock(t, mock.Config{})
	c := newClient()
	f := func(body string, k string, wantContent int) {
		t.Helper()
		resp := post(t, c, base+"/v1/chat/completions", body, "x-mock-fail-after", k, "x-mock-chunks", "5")
		if resp.StatusCode != 200 {
			t.Fatalf("fail_after=%s: got status %d; want 200", k, resp.StatusCode)
		}
		raw, err := readAll(resp)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("fail_after=%s: got read error %v; want %v", k, err, io.ErrUnexpectedEOF)
		}
		data := sseData(t, raw)
		if len(data) != 1+wantContent {
			t.Fatalf("fail_after=%s: got %d events; want role + %d content:\n%s", k, len(data), wantContent, raw)
		}
		if bytes.Contains(raw, []byte("[DONE]")) || bytes.Contains(raw, []byte("finish_reason\":\"")) {
			t.Fatalf("fail_after=%s: a cut stream must not finish:\n%s", k, raw)
		}
	}
	f(streamBody, "2", 2)
	f(streamBody, "0", 0)
	f(streamUsageBody, "5", 5)  // all content, then cut before finish_reason
	f(streamUsageBody, "99", 5) // past the end: the same
	if got := s.Stats().Cuts; got != 4 {
		t.Fatalf("got %d cuts; want 4", got)
	}

	// Buffered: the connection closes before any response byte.
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(chatBody))
	req.Header.Set("x-mock-fail-after", "0")
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("buffered fail_after: got status %d; want a transport error", resp.StatusCode)
	}

	// The server keeps serving afterwards, with in-flight settled.
	resp := post(t, c, base+"/v1/chat/completions", chatBody)
	if _, err := readAll(resp); err != nil || resp.StatusCode != 200 {
		t.Fatalf("after cuts: got %d, %v", resp.StatusCode, err)
	}
	waitFor(t, func() bool { return s.Stats().InFlight == 0 }, "in_flight to drop to 0")
}

func TestKnobStallAfter(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	const stall = 300 * time.Millisecond
	resp := post(t, c, base+"/v1/chat/completions", streamBody,
		"x-mock-stall-after", "1", "x-mock-stall-for", stall.String(), "x-mock-chunks", "3")
	defer resp.Body.Close()
	var times []time.Duration
	start := time.Now()
	buf := make([]byte, 0, 4096)
	tmp := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(tmp)
		buf = append(buf, tmp[:n]...)
		for bytes.Count(buf, []byte("\n\n")) > len(times) {
			times = append(times, time.Since(start))
		}
		if err != nil {
			break
		}
	}
	data := sseData(t, buf)
	if len(data) != 6 || data[5] != "[DONE]" {
		t.Fatalf("got %d events; want role, 3 content, finish, [DONE]:\n%s", len(data), buf)
	}
	// Events 0 (role) and 1 (first content) come at once; event 2 waits for the stall.
	if gap := times[2] - times[1]; gap < stall-20*time.Millisecond {
		t.Fatalf("got %s between content chunks 1 and 2; want about %s", gap, stall)
	}
	if times[1] > stall/2 {
		t.Fatalf("the first content chunk came after %s; the stall started too early", times[1])
	}

	// A client timeout (the gateway's stream_timeout) fires during the stall.
	ctx := &http.Client{Transport: &http.Transport{}, Timeout: 200 * time.Millisecond}
	resp = post(t, ctx, base+"/v1/chat/completions", streamBody, "x-mock-stall-after", "0", "x-mock-stall-for", "10s")
	if _, err := readAll(resp); err == nil {
		t.Fatalf("want a timeout error while the stream stalls")
	}
}

func TestKnobDelays(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()

	// first_token_delay: headers at once, first event after the delay.
	const ftd = 250 * time.Millisecond
	start := time.Now()
	resp := post(t, c, base+"/v1/chat/completions", streamBody, "x-mock-first-token-delay", ftd.String())
	headers := time.Since(start)
	_, err := readAll(resp)
	total := time.Since(start)
	if err != nil {
		t.Fatalf("cannot read stream: %s", err)
	}
	if headers > ftd/2 || total < ftd {
		t.Fatalf("first_token_delay=%s: headers after %s, body after %s; want headers at once and body after the delay", ftd, headers, total)
	}

	// latency: nothing, not even headers, before it.
	start = time.Now()
	resp = post(t, c, base+"/v1/chat/completions", chatBody, "x-mock-latency", "200ms")
	headers = time.Since(start)
	readAll(resp)
	if headers < 200*time.Millisecond {
		t.Fatalf("latency=200ms: headers after %s", headers)
	}

	// chunk_delay: between content chunks.
	start = time.Now()
	resp = post(t, c, base+"/v1/chat/completions", streamBody, "x-mock-chunk-delay", "50ms", "x-mock-chunks", "5")
	readAll(resp)
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("chunk_delay=50ms x 5 chunks: stream took %s; want >= 200ms", d)
	}
}

func TestKnobStreamEnds(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	f := func(body string, header []string, want []string) {
		t.Helper()
		resp := post(t, c, base+"/v1/chat/completions", body, header...)
		raw, err := readAll(resp)
		if err != nil {
			t.Fatalf("%v: cannot read stream: %s", header, err)
		}
		data := sseData(t, raw)
		var got []string
		for _, d := range data {
			if d == "[DONE]" {
				got = append(got, d)
				continue
			}
			ch := decodeChunk(t, d)
			switch {
			case len(ch.Choices) == 0:
				got = append(got, "usage")
			case ch.Choices[0].FinishReason != nil:
				got = append(got, "finish")
			case ch.Choices[0].Delta.Role != nil:
				got = append(got, "role")
			default:
				got = append(got, "content")
			}
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("%v: got events %v; want %v", header, got, want)
		}
	}
	f(streamBody, []string{"x-mock-empty-stream", "true"}, []string{"[DONE]"})
	f(streamUsageBody, []string{"x-mock-empty-stream", ""}, []string{"[DONE]"})
	f(streamBody, []string{"x-mock-empty-stream", "1", "x-mock-no-done", "1"}, nil)
	f(streamBody, []string{"x-mock-no-done", "true", "x-mock-chunks", "1"}, []string{"role", "content", "finish"})
	f(streamUsageBody, []string{"x-mock-no-done", "true", "x-mock-chunks", "1"}, []string{"role", "content", "finish", "usage"})
	f(streamBody, []string{"x-mock-chunks", "0"}, []string{"role", "finish", "[DONE]"})
}

func TestKnobModelSuffix(t *testing.T) {
	_, base := startMock(t, mock.Config{Knobs: mock.Knobs{ModelSuffix: "-2024-08-06"}})
	c := newClient()
	resp := post(t, c, base+"/v1/chat/completions", chatBody)
	b, _ := readAll(resp)
	var got completion
	if err := json.Unmarshal(b, &got); err != nil || got.Model != "gpt-4o-2024-08-06" {
		t.Fatalf("got model %q (%v); want gpt-4o-2024-08-06", got.Model, err)
	}
	// Per request, escaped where needed.
	resp = post(t, c, base+"/v1/chat/completions", streamBody, "x-mock-model-suffix", `-"q"`)
	raw, _ := readAll(resp)
	for _, d := range sseData(t, raw) {
		if d != "[DONE]" && decodeChunk(t, d).Model != `gpt-4o-"q"` {
			t.Fatalf("got chunk %s; want model %q", d, `gpt-4o-"q"`)
		}
	}
}

func TestPathKnobs(t *testing.T) {
	s, base := startMock(t, mock.Config{})
	c := newClient()
	resp := post(t, c, base+"/knobs/chunks=2,chunk_size=3,no_done,model-suffix=-x%2Cy/v1/chat/completions", streamBody)
	raw, _ := readAll(resp)
	data := sseData(t, raw)
	if len(data) != 4 || data[3] == "[DONE]" {
		t.Fatalf("got %d events; want role, 2 content, finish and no [DONE]:\n%s", len(data), raw)
	}
	if ch := decodeChunk(t, data[1]); len(*ch.Choices[0].Delta.Content) != 3 || ch.Model != "gpt-4o-x,y" {
		t.Fatalf("got chunk %s; want 3 content bytes and model gpt-4o-x,y", data[1])
	}
	// Headers win over the path.
	resp = post(t, c, base+"/knobs/status=503/v1/chat/completions", chatBody, "x-mock-status", "429")
	readAll(resp)
	if resp.StatusCode != 429 {
		t.Fatalf("got status %d; want the header's 429", resp.StatusCode)
	}
	if reqs := s.Requests(); reqs[len(reqs)-1].Path != "/knobs/status=503/v1/chat/completions" {
		t.Fatalf("recorded path %q; want the path as sent", reqs[len(reqs)-1].Path)
	}
}

func TestBadKnobs(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	f := func(url string, header ...string) {
		t.Helper()
		resp := post(t, c, url, chatBody, header...)
		b, _ := readAll(resp)
		var e openAIError
		if resp.StatusCode != 400 || json.Unmarshal(b, &e) != nil || !strings.HasPrefix(e.Error.Message, "mock: ") {
			t.Fatalf("%s %v: got %d %s; want 400 with a mock: message", url, header, resp.StatusCode, b)
		}
	}
	f(base+"/v1/chat/completions", "x-mock-chunkz", "1")
	f(base+"/v1/chat/completions", "x-mock-chunks", "many")
	f(base+"/v1/chat/completions", "x-mock-chunk-size", "0")
	f(base+"/v1/chat/completions", "x-mock-chunk-delay", "10")
	f(base+"/v1/chat/completions", "x-mock-status", "1000")
	f(base+"/v1/chat/completions", "x-mock-no-done", "maybe")
	f(base+"/v1/chat/completions", "x-mock-stream-error-after", "soon")
	f(base+"/v1/chat/completions", "x-mock-chunks", "1048576", "x-mock-chunk-size", "1048576")
	f(base + "/knobs/bogus=1/v1/chat/completions")
}

// waitFor polls cond for up to 5s.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestKnobStreamErrorAfter(t *testing.T) {
	s, base := startMock(t, mock.Config{})
	c := newClient()
	f := func(body string, header []string, wantContent int) {
		t.Helper()
		resp := post(t, c, base+"/v1/chat/completions", body, header...)
		raw, err := readAll(resp)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%v: got status %d, read error %v; want 200 and a complete body", header, resp.StatusCode, err)
		}
		data := sseData(t, raw)
		if len(data) != 2+wantContent {
			t.Fatalf("%v: got %d events; want role + %d content + error:\n%s", header, len(data), wantContent, raw)
		}
		var e openAIError
		if err := json.Unmarshal([]byte(data[len(data)-1]), &e); err != nil || e.Error.Type != "server_error" || e.Error.Message == "" {
			t.Fatalf("%v: last event %s is not an OpenAI error (%v)", header, data[len(data)-1], err)
		}
		if m := object(t, data[len(data)-1]); len(m) != 1 {
			t.Fatalf("%v: the error event has members besides error: %s", header, data[len(data)-1])
		}
		if bytes.Contains(raw, []byte("[DONE]")) || bytes.Contains(raw, []byte(`"finish_reason":"`)) {
			t.Fatalf("%v: a stream ended by an error must not finish:\n%s", header, raw)
		}
	}
	f(streamBody, []string{"x-mock-stream-error-after", "2"}, 2)
	f(streamBody, []string{"x-mock-stream-error-after", "0"}, 0)
	f(streamUsageBody, []string{"x-mock-stream-error-after", "99"}, 5) // all content, then the error
	f(streamBody, []string{"x-mock-stream-error-after", "1", "x-mock-tool-calls", "1", "x-mock-chunks", "2"}, 1)
	// Path knobs work too.
	resp := post(t, c, base+"/knobs/stream_error_after=1/v1/chat/completions", streamBody)
	if raw, _ := readAll(resp); !bytes.Contains(raw, []byte(`{"error":`)) {
		t.Fatalf("path knob: got %s", raw)
	}
	if got := s.Stats().Errors; got != 5 {
		t.Fatalf("got %d errors counted; want 5", got)
	}
	// A cut before the error position wins.
	resp = post(t, c, base+"/v1/chat/completions", streamBody, "x-mock-stream-error-after", "3", "x-mock-fail-after", "1")
	if raw, err := readAll(resp); !errors.Is(err, io.ErrUnexpectedEOF) || bytes.Contains(raw, []byte(`{"error":`)) {
		t.Fatalf("fail_after=1 before stream_error_after=3: got %v\n%s", err, raw)
	}
	// Buffered answers are not streams: the knob does not apply.
	resp = post(t, c, base+"/v1/chat/completions", chatBody, "x-mock-stream-error-after", "0")
	if b, _ := readAll(resp); resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"chat.completion"`)) {
		t.Fatalf("buffered: got %d %s", resp.StatusCode, b)
	}
}
