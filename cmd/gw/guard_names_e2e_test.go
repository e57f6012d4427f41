package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// namesFile guards one model whose upstream (an OpenAI-compatible server
// that spells its answers' names in capitals) is the test's own.
const namesFile = `_format_version: "1"
provider_keys:
  - {display_name: odd, api_key: "${E2E_OPENAI_KEY}", api_base: "${ODD_UPSTREAM}/v1", apis: {}}
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_models: ["*"]}
models:
  - {display_name: gpt, provider: openai, model_name: gpt-4o, provider_key: odd}
  - {display_name: gpt-open, provider: openai, model_name: gpt-4o, provider_key: odd}
guardrails:
  - {name: out-words, kind: keyword, hook_point: output, patterns: [{kind: literal, value: deterministic}]}
  - {name: out-open, kind: keyword, hook_point: output, fail_open: true, patterns: [{kind: literal, value: deterministic}]}
guardrail_attachments:
  - {guardrail_id: out-words, scope_type: model, scope_id: gpt}
  - {guardrail_id: out-open, scope_type: model, scope_id: gpt-open}
`

// TestGuardAnswerNames: output guardrails read an upstream's answer as a
// Go client reads it: "Content" is the content, buffered or streamed, and
// is judged; an answer spelling one name twice ("content" and "Content")
// cannot be read one way, so a fail-closed chain refuses it
// (guardrail_unavailable) and a fail-open one passes it with a bypass.
func TestGuardAnswerNames(t *testing.T) {
	var answer, chunks string // what the upstream says next
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := io.ReadAll(r.Body)
		if strings.Contains(string(req), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, c := range strings.Split(chunks, "\n") {
				_, _ = w.Write([]byte("data: " + c + "\n\n"))
			}
			_, _ = w.Write([]byte("data: [DONE]\n\n"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(answer))
	}))
	defer up.Close()
	t.Setenv("ODD_UPSTREAM", up.URL)
	g := startGW(t, writeTemp(t, "names.yaml", namesFile))
	url := "http://" + g.addr + "/v1/chat/completions"
	ask := func(model string, stream bool) (int, string) {
		t.Helper()
		body := `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`
		if stream {
			body = `{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"hi"}]}`
		}
		return rawStream(t, url, body, nil)
	}
	const head = `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant",`
	const chunkHead = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":`

	// Buffered: "Content" in capitals is judged (it passed unjudged).
	answer, chunks = head+`"Content":"a deterministic answer"}}]}`, ""
	if st, body := ask("gpt", false); st != 422 || !strings.Contains(body, `"content_filter"`) || strings.Contains(body, "deterministic answer") {
		t.Fatalf("capitalised content: %d %s", st, body)
	}
	answer = head + `"Content":"a clean answer"}}]}`
	if st, body := ask("gpt", false); st != 200 || !strings.Contains(body, "a clean answer") {
		t.Fatalf("clean capitalised content: %d %s", st, body)
	}
	// Two spellings of one name: refused when failing closed, passed with
	// a bypass when open.
	answer = head + `"content":"fine","Content":"deterministic"}}]}`
	if st, body := ask("gpt", false); st != 422 || !strings.Contains(body, `"guardrail_unavailable"`) {
		t.Fatalf("two spellings, fail closed: %d %s", st, body)
	}
	if st, body := ask("gpt-open", false); st != 200 || !strings.Contains(body, `"Content":"deterministic"`) {
		t.Fatalf("two spellings, fail open: %d %s", st, body)
	}

	// Streamed: the same, chunk by chunk.
	answer = ""
	chunks = chunkHead + `{"Role":"assistant","Content":""},"finish_reason":null}]}` + "\n" +
		chunkHead + `{"Content":"a determ"},"finish_reason":null}]}` + "\n" +
		chunkHead + `{"Content":"inistic answer"},"finish_reason":null}]}` + "\n" +
		chunkHead + `{},"finish_reason":"stop"}]}`
	if st, body := ask("gpt", true); !strings.Contains(body, `content_filter`) || strings.Contains(body, "inistic") {
		t.Fatalf("capitalised streamed content: %d %s", st, body)
	}
	chunks = chunkHead + `{"content":"fine","Content":"deterministic"},"finish_reason":null}]}` + "\n" + chunkHead + `{},"finish_reason":"stop"}]}`
	if st, body := ask("gpt", true); !strings.Contains(body, `guardrail_unavailable`) || strings.Contains(body, `"Content":"deterministic"`) {
		t.Fatalf("two spellings streamed, fail closed: %d %s", st, body)
	}
}
