package fuzz

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
	"unicode/utf8"

	"gw/edge/usage"
	"gw/edge/usage/controlplane"
	"gw/edge/usage/otlp"
)

// FuzzRetryAfter: a receiver's Retry-After never yields a negative wait or
// one over the 30 s cap, whatever it says.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "1", "30", "31", "120", "-5", "1.5", "99999999999999999999999", "Wed, 21 Oct 2015 07:28:00 GMT",
		"Thu, 01 Jan 2026 00:00:10 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "  7  ", "\x00"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d := usage.ParseRetryAfter(v, now)
		if d < 0 || d > usage.RetryAfterMax {
			t.Fatalf("ParseRetryAfter(%q) = %v", v, d)
		}
		err := usage.CheckResponse(503, http.Header{"Retry-After": []string{v}}, []byte(v))
		se, ok := err.(*usage.SendError)
		if !ok || se.Permanent || se.RetryAfter < 0 || se.RetryAfter > usage.RetryAfterMax {
			t.Fatalf("CheckResponse: %#v", err)
		}
	})
}

// FuzzErrorSnippet: a receiver's error body becomes a short printable
// one-line string.
func FuzzErrorSnippet(f *testing.F) {
	for _, s := range []string{"", `{"error":"bad"}`, "line1\nline2", "caf\xc3\xa9", "\x00\x01\x7f", string(make([]byte, 500))} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s := usage.ErrorSnippet(body)
		if len(s) > 200 || !utf8.ValidString(s) {
			t.Fatalf("snippet %q", s)
		}
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] > 0x7e {
				t.Fatalf("unprintable byte in %q", s)
			}
		}
		// The control plane's answers go through the same snippet.
		if err := controlplane.Classify(500, http.Header{}, body, 1); err == nil {
			t.Fatal("a 500 accepted")
		}
	})
}

// FuzzOTLPPartialSuccess: any response body of an OTLP receiver is read
// without panicking, and a decoded rejection count is never negative for
// well-formed varints.
func FuzzOTLPPartialSuccess(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x07, 0x08, 0x03, 0x12, 0x03, 'b', 'a', 'd'})
	f.Add([]byte{0x0a, 0xff})
	f.Add([]byte{0x0a, 0x02, 0x08, 0x80})
	f.Add([]byte(`{"partialSuccess":{}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_, msg := otlp.PartialSuccess(body)
		if len(msg) > len(body) {
			t.Fatal("message longer than the body")
		}
	})
}

// FuzzRecordJSON: records with arbitrary strings encode to valid JSON
// that decodes back to the same strings.
func FuzzRecordJSON(f *testing.F) {
	f.Add("gpt", "chat.completions", "Zoë", "caf\xc3\xa9\x00\"\\", int64(10), int64(-1))
	f.Fuzz(func(t *testing.T, model, op, user, msg string, tokens, total int64) {
		r := usage.Record{OccurredAt: time.Unix(0, 0), RequestID: usage.NewRequestID(), Attempt: 1, AttemptKind: usage.AttemptFinal, StatusCode: 500,
			Model: model, Operation: op, UserName: user, ErrorMessage: msg, PromptTokens: tokens, TotalTokens: total,
			GuardrailEnforcedHits: []usage.GuardrailHit{{Guardrail: msg, Action: op}}}
		b := usage.AppendJSON(nil, &r)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("invalid JSON: %v\n%s", err, b)
		}
		if utf8.ValidString(model) && m["model"] != model {
			t.Fatalf("model %q came back as %q", model, m["model"])
		}
		if (total > 0) != (m["total_tokens"] != nil) {
			t.Fatalf("total_tokens %d encoded as %v", total, m["total_tokens"])
		}
	})
}
