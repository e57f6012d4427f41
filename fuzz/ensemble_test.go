package fuzz

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"gw/edge"
)

// FuzzEnsembleBodies: for any chat body the read stage accepts (a JSON
// object with a messages array), the member body is valid JSON without
// stream settings and with the member's overrides, and the judge body is
// valid JSON whose messages are the prompt, the caller's messages and one
// message carrying every answer verbatim.
func FuzzEnsembleBodies(f *testing.F) {
	for _, s := range []string{
		`{"model":"p","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"p","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"temperature":1}`,
		`{ "messages" : [ ] , "seed" : 3 }`,
		`{"messages":[{"role":"system","content":"\u00e9\"\\"}],"stream":false}`,
	} {
		f.Add([]byte(s), "answer \"one\"\n", "")
	}
	f.Fuzz(func(t *testing.T, body []byte, a1, a2 string) {
		var req map[string]json.RawMessage
		if json.Unmarshal(body, &req) != nil {
			return
		}
		var msgs []json.RawMessage
		if json.Unmarshal(req["messages"], &msgs) != nil || req["messages"] == nil {
			return
		}
		answers := [][]byte{[]byte(a1), []byte(a2)}
		mb, jb, err := edge.EnsembleBodies(body, []byte("0.5"), []byte("7"), answers)
		if err != nil {
			t.Fatalf("EnsembleBodies(%q): %v", body, err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(mb, &m); err != nil {
			t.Fatalf("member body of %q is not JSON: %v\n%s", body, err, mb)
		}
		if _, has := m["stream"]; has || m["stream_options"] != nil || string(m["temperature"]) != "0.5" || string(m["seed"]) != "7" {
			t.Fatalf("member body of %q: %s", body, mb)
		}
		// The caller's messages are copied as they are (a malformed one is
		// the upstream's to refuse); gw's own first and last are objects.
		type message struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		}
		var j struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(jb, &j); err != nil {
			t.Fatalf("judge body of %q is not JSON: %v\n%s", body, err, jb)
		}
		var first, lastMsg message
		if len(j.Messages) != len(msgs)+2 || json.Unmarshal(j.Messages[0], &first) != nil || json.Unmarshal(j.Messages[len(j.Messages)-1], &lastMsg) != nil ||
			first.Role != "system" || lastMsg.Role != "user" {
			t.Fatalf("judge messages of %q: %s", body, jb)
		}
		last, _ := lastMsg.Content.(string)
		for _, a := range answers {
			// Invalid UTF-8 is replaced by the quoting (as encoding/json
			// does); valid text must arrive verbatim.
			if utf8.Valid(a) && !bytes.Contains([]byte(last), a) {
				t.Fatalf("judge message %q lacks answer %q", last, a)
			}
		}
	})
}

// FuzzEnsembleAnswerText: reading a member's answer never panics, and a
// text found is the decoded content of the first choice.
func FuzzEnsembleAnswerText(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"index":0,"message":{"role":"assistant","content":"Hi"}}]}`,
		`{"choices":[{"message":{"content":null}}]}`,
		`{"choices":[{"message":{"content":"a\u0000\ud800"}}]}`,
		`{"choices":"x"}`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := edge.EnsembleAnswerText(nil, body)
		if !ok {
			return
		}
		var r struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if json.Unmarshal(body, &r) != nil || len(r.Choices) == 0 {
			return // lenient scanner on a body encoding/json refuses
		}
		if len(got) == 0 {
			t.Fatalf("EnsembleAnswerText(%q) ok with no text", body)
		}
	})
}
