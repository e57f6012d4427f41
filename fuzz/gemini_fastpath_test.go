package fuzz

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"gw/sse/gemini"
)

// FuzzGeminiTextRelay: text parts of any content, written by encoding/json
// (so with \u003c-style and surrogate escapes) or verbatim where that is
// valid JSON, nested among other parts and members, reach the chat caller
// unchanged: the chunks' content and reasoning_content decode to exactly
// the texts sent (invalid UTF-8 as U+FFFD, as encoding/json reads it).
// This covers the walk's verbatim copy of plain text and its re-quoting of
// escaped text.
func FuzzGeminiTextRelay(f *testing.F) {
	f.Add("plain text", "more", false, uint8(0))
	f.Add("a\"b\\c\nd", "é😀", true, uint8(1))
	f.Add("<tag>&amp;\u2028", "\x00\x1f", false, uint8(2))
	f.Add("bad utf8 \xff\xfe", "\xed\xa0\x80", true, uint8(3))
	f.Add("", "only second", false, uint8(4))
	f.Fuzz(func(t *testing.T, a, b string, thought bool, shape uint8) {
		// What each text decodes to, taken before the texts are joined (two
		// halves of a rune in two parts stay two U+FFFD).
		wa, wb := utf8Fix(a), utf8Fix(b)
		q := func(s string) string {
			out, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			if shape&4 != 0 && utf8.ValidString(s) && !strings.ContainsAny(s, "\"\\") && !hasCtl(s) {
				return `"` + s + `"` // the upstream's own spelling, no escapes
			}
			return string(out)
		}
		th := "false"
		if thought {
			th = "true"
		}
		var parts string
		switch shape % 4 {
		case 0:
			parts = `{"text":` + q(a) + `},{"text":` + q(b) + `,"thought":` + th + `}`
		case 1:
			parts = `{"text":` + q(a) + `,"extra":{"parts":[{"text":"no"}]}},"skip",{"inlineData":{"data":"AA"}},{"thought":` + th + `,"text":` + q(b) + `}`
		case 2:
			parts = `{"thoughtSignature":"c2ln","text":` + q(a) + `},{"functionCall":{"name":"f","args":{"t":` + q(b) + `}}}`
		default:
			parts = `{"text":` + q(a) + `,"text":` + q(b) + `}`
		}
		ev := `{"candidates":[{"content":{"role":"model","parts":[` + parts + `]},"index":0}],"usageMetadata":{"promptTokenCount":1},"responseId":"r"}`
		var want struct {
			content, reasoning string
		}
		switch shape % 4 {
		case 0, 1:
			want.content = wa
			if thought {
				want.reasoning = wb
			} else {
				want.content += wb
			}
		case 2:
			want.content = wa
		default:
			want.content = wb // the last duplicate wins
		}
		s := gemini.AcquireToChatStream([]byte("m"))
		defer gemini.ReleaseToChatStream(s)
		out, err := s.Event(nil, nil, []byte(ev))
		if err != nil {
			t.Fatalf("cannot convert %s: %v", ev, err)
		}
		out = s.End(out)
		var content, reasoning strings.Builder
		for _, fr := range bytes.Split(bytes.TrimSuffix(out, []byte("\n\n")), []byte("\n\n")) {
			d, ok := bytes.CutPrefix(fr, []byte("data: "))
			if !ok {
				t.Fatalf("bad frame %q", fr)
			}
			if string(d) == "[DONE]" {
				continue
			}
			var c struct {
				Choices []struct {
					Delta struct {
						Content          *string `json:"content"`
						ReasoningContent *string `json:"reasoning_content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(d, &c); err != nil {
				t.Fatalf("frame is not JSON: %s", d)
			}
			for _, ch := range c.Choices {
				if ch.Delta.Content != nil {
					content.WriteString(*ch.Delta.Content)
				}
				if ch.Delta.ReasoningContent != nil {
					reasoning.WriteString(*ch.Delta.ReasoningContent)
				}
			}
		}
		if got, w := content.String(), want.content; got != w {
			t.Fatalf("content %q; want %q (event %s)", got, w, ev)
		}
		if got, w := reasoning.String(), want.reasoning; got != w {
			t.Fatalf("reasoning %q; want %q (event %s)", got, w, ev)
		}
	})
}

// utf8Fix is s as encoding/json writes and reads it back: each byte of
// invalid UTF-8 becomes U+FFFD.
func utf8Fix(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r) // range yields U+FFFD per invalid byte
	}
	return b.String()
}

func hasCtl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 {
			return true
		}
	}
	return false
}
