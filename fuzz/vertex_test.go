package fuzz

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"testing"

	"gw/sse"
	"gw/sse/gemini"
	"gw/sse/msgconv"
)

// geminiSeeds are the recorded Gemini streams and the hand-written ones.
var geminiSeeds = []string{
	"../sse/testdata/gemini_stream_text.sse",
	"../sse/testdata/gemini_stream_function_call.sse",
	"../sse/gemini/testdata/synthetic_thinking_parallel_calls.sse",
	"../sse/gemini/testdata/synthetic_safety_finish.sse",
	"../sse/gemini/testdata/synthetic_prompt_blocked.sse",
	"../sse/gemini/testdata/synthetic_error_mid_stream.sse",
}

// FuzzGeminiStream: any bytes read as a Gemini SSE stream, at a fuzzed split
// point, never panic; every frame written is a data frame whose payload is
// JSON or [DONE]; the same input split differently gives the same bytes;
// and the chat frames convert on to a Messages caller without error.
func FuzzGeminiStream(f *testing.F) {
	for _, p := range geminiSeeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint16(7))
	}
	f.Add([]byte("data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"\\u0066\",\"args\":[]}}]}}]}\n\n"), uint16(3))
	f.Fuzz(func(t *testing.T, in []byte, split uint16) {
		one := geminiRelay(t, in, len(in)+1)
		two := geminiRelay(t, in, int(split%64)+1)
		// Synthesised ids (time and a sequence) and `created` differ by run.
		if !bytes.Equal(geminiIDs.ReplaceAll(one, nil), geminiIDs.ReplaceAll(two, nil)) {
			t.Fatalf("split %d changed the output:\n%s\n---\n%s", split%64+1, one, two)
		}
		for _, fr := range bytes.Split(bytes.TrimSuffix(one, []byte("\n\n")), []byte("\n\n")) {
			if len(fr) == 0 {
				continue
			}
			d, ok := bytes.CutPrefix(fr, []byte("data: "))
			if !ok || (!json.Valid(d) && string(d) != "[DONE]") {
				t.Fatalf("bad frame %q", fr)
			}
		}
		// On to a Messages caller.
		c := msgconv.AcquireChatToMessagesStream([]byte("alias"))
		defer msgconv.ReleaseChatToMessagesStream(c)
		rd := sse.AcquireReader(bytes.NewReader(one))
		defer sse.ReleaseReader(rd)
		var out []byte
		for {
			ev, err := rd.Next()
			if err != nil {
				break
			}
			if out, err = c.Event(out, nil, ev.Data); err != nil && !errors.Is(err, msgconv.ErrMalformedEvent) {
				t.Fatalf("messages caller: %v", err)
			}
		}
	})
}

var geminiIDs = regexp.MustCompile(`call_[0-9a-f]+|chatcmpl-gw[0-9a-f]+|"created":[0-9]+`)

type chunkReader struct {
	b []byte
	n int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, errEOF
	}
	n := copy(p[:min(len(p), r.n)], r.b)
	r.b = r.b[n:]
	return n, nil
}

var errEOF = errors.New("EOF")

func geminiRelay(t *testing.T, in []byte, chunk int) []byte {
	s := gemini.AcquireToChatStream([]byte("alias"))
	defer gemini.ReleaseToChatStream(s)
	rd := sse.AcquireReader(&chunkReader{b: in, n: chunk})
	defer sse.ReleaseReader(rd)
	var out []byte
	for {
		ev, err := rd.Next()
		if err != nil {
			break
		}
		out, _ = s.Event(out, ev.Name, ev.Data)
		if s.Err() != nil {
			return out
		}
	}
	out = s.End(out)
	if _, ok := s.Usage(); ok && s.Err() != nil {
		t.Fatal("usage after error")
	}
	return out
}

// FuzzGeminiResponse: any body converts without panic to a valid chat
// completion or an error.
func FuzzGeminiResponse(f *testing.F) {
	f.Add([]byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"a","thought":true},{"text":"b"},{"functionCall":{"name":"f","args":{"x":1}}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1},"responseId":"r"}`))
	f.Add([]byte(`{"promptFeedback":{"blockReason":"SAFETY"}}`))
	f.Add([]byte(`{"error":{"code":429,"message":"m","status":"RESOURCE_EXHAUSTED"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, _, err := gemini.ResponseToChat(nil, body, []byte("alias"))
		if err == nil && !json.Valid(out) {
			t.Fatalf("invalid chat completion %s", out)
		}
	})
}

// FuzzGeminiRequest: any chat body converts without panic to valid JSON
// (or ErrInvalidRequest), and every valid chat body that converts has
// contents.
func FuzzGeminiRequest(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"q"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]},{"role":"assistant","tool_calls":[{"id":"c__thought__S","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c__thought__S","content":"r"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"auto","reasoning_effort":"low","stop":"x","response_format":{"type":"json_object"}}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":"\u00e9\"\\"}],"temperature":1e400}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := gemini.ChatRequestToGemini(nil, body)
		if err != nil {
			if !errors.Is(err, gemini.ErrInvalidRequest) {
				t.Fatalf("error %v is not ErrInvalidRequest", err)
			}
			return
		}
		if !json.Valid(body) {
			return // lenient on invalid input: the edge validates bodies first
		}
		if !json.Valid(out) {
			t.Fatalf("invalid Gemini body %s\nfrom %s", out, body)
		}
	})
}
