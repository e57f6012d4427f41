package aiproxymulti

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"gw/edge/gateway/plugin"
	"gw/edge/usage"
)

// records collects what a pipeline's observer sees.
type records struct {
	mu   sync.Mutex
	list []usage.Record
}

func (r *records) wait(t *testing.T, n int) []usage.Record {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r.mu.Lock()
		if len(r.list) >= n {
			out := r.list
			r.list = nil
			r.mu.Unlock()
			return out
		}
		r.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("got %d usage records; want %d", len(r.list), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestUsageRecords: every request answered by the plugin writes the AI
// path's records: a zero-token failed_attempt per skipped instance, then
// the final record with the answering instance, its status and the
// upstream's tokens (read from the body, or from the stream's usage chunk
// split across reads); a request no instance answered writes the gateway's
// own status. A stream without a usage chunk records no tokens.
func TestUsageRecords(t *testing.T) {
	busy := newBackend(t, "busy", 429)
	good := newBackend(t, "good", 200)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	pipe := usage.New(usage.Options{})
	defer pipe.Close(time.Second)
	var got records
	pipe.Observe(func(r *usage.Record) {
		got.mu.Lock()
		got.list = append(got.list, *r)
		got.mu.Unlock()
	})
	env := &plugin.Env{Shared: plugin.NewShared(), Usage: pipe}
	conf := `{"instances":[
		{"name":"busy","provider":"openai-compatible","weight":1,"priority":1,"override":{"endpoint":"` + busy.srv.URL + `"}},
		{"name":"good","provider":"deepseek","weight":1,"override":{"endpoint":"` + good.srv.URL + `"},"options":{"model":"m-good"}}
	],"fallback_http_statuses":[429]}`
	p, err := New(json.RawMessage(conf), env, "route/u")
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, r usage.Record, kind string, attempt, status int, class, key string, prompt, completion, total int64, stream bool) {
		t.Helper()
		if r.AttemptKind != kind || r.Attempt != attempt || r.StatusCode != status || r.ErrorClass != class || r.ProviderKey != key ||
			r.PromptTokens != prompt || r.CompletionTokens != completion || r.TotalTokens != total || r.Stream != stream ||
			r.Model != "m" || r.InboundProtocol != protocolChat || r.Operation != operationChat {
			t.Errorf("%s: %+v", name, r)
		}
	}

	run(t, p, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	recs := got.wait(t, 2)
	check("buffered failed attempt", recs[0], usage.AttemptFailed, 1, 429, "upstream_status", "busy", 0, 0, 0, false)
	check("buffered final", recs[1], usage.AttemptFinal, 2, 200, "", "good", 7, 3, 10, false)
	if f := recs[1]; f.Provider != "deepseek" || f.UpstreamModel != "m-good" || f.CachedPromptTokens != 2 || f.RequestID != recs[0].RequestID ||
		f.ResponseBodyBytes == 0 || f.RequestBodyBytes == 0 || recs[0].RequestBodyBytes != 0 || f.Latency <= 0 {
		t.Errorf("buffered final: %+v", f)
	}

	// The stream is relayed unchanged, so its usage chunk comes when the
	// caller asks for it.
	resp := run(t, p, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
	if !strings.Contains(string(resp.Body()), "[DONE]") {
		t.Fatalf("stream: %s", resp.Body())
	}
	recs = got.wait(t, 2)
	check("streamed failed attempt", recs[0], usage.AttemptFailed, 1, 429, "upstream_status", "busy", 0, 0, 0, true)
	check("streamed final", recs[1], usage.AttemptFinal, 2, 200, "", "good", 11, 4, 15, true)
	if f := recs[1]; f.TTFT <= 0 || f.UpstreamTTFT <= 0 || f.ResponseBodyBytes == 0 {
		t.Errorf("streamed final: %+v", f)
	}

	run(t, p, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	recs = got.wait(t, 2)
	check("streamed final without include_usage", recs[1], usage.AttemptFinal, 2, 200, "", "good", 0, 0, 0, true)

	one := `{"instances":[{"name":"dead","provider":"openai-compatible","weight":1,"override":{"endpoint":"` + deadURL + `"}}]}`
	pd, err := New(json.RawMessage(one), env, "route/d")
	if err != nil {
		t.Fatal(err)
	}
	run(t, pd, `{"model":"m","messages":[]}`)
	recs = got.wait(t, 2)
	check("unreachable failed attempt", recs[0], usage.AttemptFailed, 1, 502, "upstream_failed", "dead", 0, 0, 0, false)
	check("unreachable final", recs[1], usage.AttemptFinal, 1, 502, "upstream_failed", "dead", 0, 0, 0, false)
}

func TestUsageScanner(t *testing.T) {
	stream := "data: {\"choices\":[{\"delta\":{\"content\":\"usage\"}}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":6,\"total_tokens\":11}}\r\n\r\n" +
		"data: [DONE]\n\n"
	for _, size := range []int{1, 3, 7, 64, len(stream)} {
		var s usageScanner
		for i := 0; i < len(stream); i += size {
			s.feed([]byte(stream[i:min(i+size, len(stream))]))
		}
		if !s.ok || s.u.Prompt != 5 || s.u.Completion != 6 || s.u.Total != 11 {
			t.Errorf("pieces of %d: %+v %v", size, s.u, s.ok)
		}
	}
	var s usageScanner
	s.feed([]byte("data: {\"x\":\"" + strings.Repeat("a", maxUsageLine) + "\",\"usage\":{\"total_tokens\":1}}\n"))
	if s.ok {
		t.Errorf("an over-long line was read: %+v", s.u)
	}
	s.feed([]byte("data: {\"usage\":{\"total_tokens\":2}}\n"))
	if !s.ok || s.u.Total != 2 {
		t.Errorf("after an over-long line: %+v %v", s.u, s.ok)
	}
}
