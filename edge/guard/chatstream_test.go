package guard

import (
	"context"

	"encoding/json"
	"gw/admin/resources"
	"strings"
	"testing"
)

func chunk(delta string, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"c1","object":"chat.completion.chunk","created":7,"model":"up","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
}

// runChat feeds chunks through a ChatStream and returns the released chunks
// and the decision.
func runChat(t *testing.T, stages []*Stage, chunks []string) ([]string, Decision, *Exec) {
	t.Helper()
	var e Exec
	var s ChatStream
	s.Reset(context.Background(), &e, "m", stages)
	var out []string
	drain := func() {
		for {
			c, ok := s.Next()
			if !ok {
				return
			}
			if !json.Valid(c) {
				t.Fatalf("released invalid JSON: %s", c)
			}
			out = append(out, string(c))
		}
	}
	for _, c := range chunks {
		if d := s.Push([]byte(c)); d >= Blocked {
			drain()
			return out, d, &e
		}
		drain()
	}
	d := s.End()
	drain()
	return out, d, &e
}

// collect rebuilds the content, reasoning and tool arguments seen by a caller.
func collect(t *testing.T, chunks []string) (content, args string, order []string) {
	for _, c := range chunks {
		var v struct {
			Choices []struct {
				Delta struct {
					Role      string `json:"role"`
					Content   string `json:"content"`
					ToolCalls []struct {
						ID       string `json:"id"`
						Function struct {
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				Finish *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(c), &v); err != nil {
			t.Fatal(err)
		}
		for _, ch := range v.Choices {
			if ch.Delta.Role != "" {
				order = append(order, "role")
			}
			if ch.Delta.Content != "" {
				content += ch.Delta.Content
				order = append(order, "text")
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.ID != "" {
					order = append(order, "tool")
				}
				args += tc.Function.Arguments
			}
			if ch.Finish != nil {
				order = append(order, "finish")
			}
		}
	}
	return content, args, order
}

func TestChatStreamSplitBlock(t *testing.T) {
	block := stage("kw", &wordChecker{word: "forbidden"}, nil)
	out, d, e := runChat(t, []*Stage{block}, []string{
		chunk(`{"role":"assistant","content":""}`, ""),
		chunk(`{"content":"this is forb"}`, ""),
		chunk(`{"content":"idden text"}`, ""),
		chunk(`{}`, "stop"),
	})
	if d != Blocked {
		t.Fatalf("decision %d", d)
	}
	content, _, _ := collect(t, out)
	if strings.Contains(content, "forb") {
		t.Fatalf("leaked %q", content)
	}
	if hitsString(e.Outcome.Enforced) != "kw:block" {
		t.Fatalf("hits %v", e.Outcome.Enforced)
	}
}

func TestChatStreamMaskAndOrder(t *testing.T) {
	mask := stage("pii", &wordChecker{word: "secret", mask: true}, nil)
	out, d, _ := runChat(t, []*Stage{mask}, []string{
		chunk(`{"role":"assistant","content":""}`, ""),
		chunk(`{"content":"a sec"}`, ""),
		chunk(`{"content":"ret b"}`, ""),
		chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\":\"sec"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"ret\"}"}}]}`, ""),
		chunk(`{}`, "tool_calls"),
		`{"id":"c1","object":"chat.completion.chunk","created":7,"model":"up","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
	})
	if d >= Blocked {
		t.Fatalf("decision %d", d)
	}
	content, args, order := collect(t, out)
	if content != "a [X] b" || args != `{"q":"[X]"}` {
		t.Fatalf("content %q args %q", content, args)
	}
	if strings.Join(order, ",") != "role,text,tool,finish" {
		t.Fatalf("order %v", order)
	}
	if !strings.Contains(out[len(out)-1], `"usage"`) {
		t.Fatalf("usage chunk not last: %v", out)
	}
}

// TestChatStreamBufferExceeded: buffer_full holds the answer; past
// max_buffer_bytes it blocks (blocked_buffer_exceeded) or, with
// on_buffer_exceeded fail_open, passes unscanned with a bypass recorded.
func TestChatStreamBufferExceeded(t *testing.T) {
	for _, failOpen := range []bool{false, true} {
		st := stage("c", &wordChecker{word: "zzz"}, func(g *resources.Guardrail) {
			g.Stream = &resources.StreamControls{Mode: resources.StreamModeBufferFull}
			g.Buffer = &resources.BufferControls{MaxBytes: 32, OnExceeded: resources.OnBufferExceededFailClosed}
			if failOpen {
				g.Buffer.OnExceeded = resources.OnBufferExceededFailOpen
			}
		})
		out, d, e := runChat(t, []*Stage{st}, []string{
			chunk(`{"content":"0123456789012345678901234567890123456789"}`, ""),
			chunk(`{"content":" zzz"}`, ""),
			chunk(`{}`, "stop"),
		})
		content, _, _ := collect(t, out)
		if failOpen {
			if d >= Blocked || content != "0123456789012345678901234567890123456789 zzz" || e.Outcome.BypassedReason != BypassBufferExceeded {
				t.Fatalf("fail_open: %d %q %q", d, content, e.Outcome.BypassedReason)
			}
		} else if d != Blocked || content != "" || hitsString(e.Outcome.Enforced) != "c:blocked_buffer_exceeded" {
			t.Fatalf("fail_closed: %d %q %v", d, content, e.Outcome.Enforced)
		}
	}
}

// TestChatStreamLogprobs: chunks carrying logprobs and obfuscation are text
// chunks like any other: a word split across them is caught, and the
// logprobs (which repeat the text) never leave.
func TestChatStreamLogprobs(t *testing.T) {
	block := stage("kw", &wordChecker{word: "forbidden"}, nil)
	lp := func(text string) string {
		return `{"id":"c1","object":"chat.completion.chunk","created":7,"model":"up","obfuscation":"abc","choices":[{"index":0,"delta":{"content":"` + text + `"},"logprobs":{"content":[{"token":"` + text + `","logprob":-0.1}]},"finish_reason":null}]}`
	}
	out, d, _ := runChat(t, []*Stage{block}, []string{lp("this is forb"), lp("idden text"), chunk(`{}`, "stop")})
	if d != Blocked {
		t.Fatalf("decision %d: %v", d, out)
	}
	for _, c := range out {
		if strings.Contains(c, "forb") {
			t.Fatalf("leaked %s", c)
		}
	}
}

// TestChatStreamUnreadableChunk: a chunk that is not JSON cannot be judged,
// so the chain's fail-open rules decide; fail-closed ends the stream
// (Unavailable) before the chunk or anything held after it is released,
// fail-open passes it in order with the bypass recorded.
func TestChatStreamUnreadableChunk(t *testing.T) {
	bad := `{"choices":[{"index":0,"delta":{"content":"forbidden"}}]`
	f := func(mut func(g *resources.Guardrail), want Decision, wantBypass string, wantClosed bool) {
		t.Helper()
		var e Exec
		var s ChatStream
		s.Reset(context.Background(), &e, "m", []*Stage{stage("kw", &wordChecker{word: "forbidden"}, mut)})
		if d := s.Push([]byte(chunk(`{"content":"held text"}`, ""))); d != Pass {
			t.Fatalf("first chunk: decision %d", d)
		}
		if d := s.Push([]byte(bad)); d != want {
			t.Fatalf("unreadable chunk: decision %d; want %d", d, want)
		}
		var released []string
		for c, ok := s.Next(); ok; c, ok = s.Next() {
			released = append(released, string(c))
		}
		if e.Outcome.BypassedReason != wantBypass || e.Outcome.BlockedFailClosed != wantClosed {
			t.Fatalf("outcome %+v", e.Outcome)
		}
		if want == Pass && (len(released) == 0 || released[len(released)-1] != bad) {
			t.Fatalf("fail-open: released %q; want the held text, then the chunk as is", released)
		}
		for _, r := range released[:max(len(released)-1, 0)] {
			if strings.Contains(r, "forbidden") {
				t.Fatalf("released %q", r)
			}
		}
	}
	f(nil, Unavailable, "", true)
	f(func(g *resources.Guardrail) { g.OutputFailOpen = true }, Pass, BypassUnreadable, false)
}

// TestChatStreamRawCap: a held stream whose text stays under
// max_buffer_bytes but whose raw chunks (framing, padding fields) pass the
// raw-byte cap (128× max_buffer_bytes) is treated as exceeding the buffer:
// blocked when failing closed, passed unscanned and recorded when open.
func TestChatStreamRawCap(t *testing.T) {
	pad := strings.Repeat("p", 200)
	for _, failOpen := range []bool{false, true} {
		st := stage("c", &wordChecker{word: "zzz"}, func(g *resources.Guardrail) {
			g.Stream = &resources.StreamControls{Mode: resources.StreamModeBufferFull}
			g.Buffer = &resources.BufferControls{MaxBytes: 32, OnExceeded: resources.OnBufferExceededFailClosed}
			if failOpen {
				g.Buffer.OnExceeded = resources.OnBufferExceededFailOpen
			}
		})
		// 32 × 128 = 4096 raw bytes; each padded chunk is over 300 and
		// adds one byte of text (23 held in all, the blocked word last).
		var chunks []string
		for i := 0; i < 20; i++ {
			chunks = append(chunks, `{"id":"c1","object":"chat.completion.chunk","created":7,"model":"up","system_fingerprint":"`+pad+`","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`)
		}
		chunks = append(chunks, chunk(`{"content":"zzz"}`, ""), chunk(`{}`, "stop"))
		out, d, e := runChat(t, []*Stage{st}, chunks)
		content, _, _ := collect(t, out)
		if failOpen {
			if d >= Blocked || content != strings.Repeat("a", 20)+"zzz" || e.Outcome.BypassedReason != BypassBufferExceeded {
				t.Fatalf("fail_open: %d %q %q", d, content, e.Outcome.BypassedReason)
			}
		} else if d != Blocked || content != "" || hitsString(e.Outcome.Enforced) != "c:blocked_buffer_exceeded" {
			t.Fatalf("fail_closed: %d %q %v", d, content, e.Outcome.Enforced)
		}
	}
}

// TestChatStreamNamesInAnotherCase: a chunk's names are read as a Go
// client reads them, as a request's are: "Content" and "\u0063ontent" are
// the content, judged and masked like it.
func TestChatStreamNamesInAnotherCase(t *testing.T) {
	block := stage("kw", &wordChecker{word: "forbidden"}, nil)
	_, d, _ := runChat(t, []*Stage{block}, []string{
		`{"ID":"c1","Model":"up","CHOICES":[{"Index":0,"Delta":{"Role":"assistant","Content":"this is forbidden"}}]}`,
	})
	if d != Blocked {
		t.Fatalf("decision %d; a capitalised content went unjudged", d)
	}
	mask := stage("pii", &wordChecker{word: "secret", mask: true}, nil)
	out, d, _ := runChat(t, []*Stage{mask}, []string{
		chunk(`{"role":"assistant","CONTENT":"a sec"}`, ""),
		chunk(`{"\u0063ontent":"ret b"}`, ""),
		chunk(`{"Tool_Calls":[{"Index":0,"ID":"call_1","Function":{"Name":"f","Arguments":"{\"q\":\"secret\"}"}}]}`, ""),
		chunk(`{}`, "stop"),
	})
	if d >= Blocked {
		t.Fatalf("decision %d", d)
	}
	content, args, _ := collect(t, out)
	if content != "a [X] b" || args != `{"q":"[X]"}` {
		t.Fatalf("content %q args %q; released %v", content, args, out)
	}
}

// TestChatStreamTwoSpellings: a chunk spelling one name twice ("content"
// and "Content") reads one way to a Go client and another to the others,
// so no single reading can be judged: it is unreadable, and the chain's
// fail-open rules decide (closed: Unavailable; open: a recorded bypass).
func TestChatStreamTwoSpellings(t *testing.T) {
	twice := chunk(`{"content":"fine","Content":"forbidden"}`, "")
	for _, failOpen := range []bool{false, true} {
		var e Exec
		var s ChatStream
		s.Reset(context.Background(), &e, "m", []*Stage{stage("kw", &wordChecker{word: "forbidden"}, func(g *resources.Guardrail) { g.OutputFailOpen = failOpen })})
		d := s.Push([]byte(twice))
		switch {
		case !failOpen && (d != Unavailable || !e.Outcome.BlockedFailClosed):
			t.Fatalf("fail closed: decision %d, outcome %+v", d, e.Outcome)
		case failOpen && (d != Pass || e.Outcome.BypassedReason != BypassUnreadable):
			t.Fatalf("fail open: decision %d, outcome %+v", d, e.Outcome)
		}
	}
}
