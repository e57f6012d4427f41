package cache

import (
	"strings"
	"testing"
)

func canon(t *testing.T, format, alias, body string) string {
	t.Helper()
	out, ok := AppendCanonical(nil, format, alias, []byte(body))
	if !ok {
		t.Fatalf("not keyed: %s", body)
	}
	return string(out)
}

// TestCanonicalSameKey: what must not change the key.
func TestCanonicalSameKey(t *testing.T) {
	base := `{"model":"gpt","messages":[{"role":"user","content":"hi there"}],"temperature":0.2}`
	f := func(name, body string) {
		t.Helper()
		if a, b := canon(t, "chat_completions", "gpt", base), canon(t, "chat_completions", "gpt", body); a != b {
			t.Errorf("%s: keys differ:\n%q\n%q", name, a, b)
		}
	}
	f("member order", `{"temperature":0.2,"messages":[{"role":"user","content":"hi there"}],"model":"gpt"}`)
	f("whitespace", "{ \"model\" : \"gpt\",\n \"messages\" : [ { \"role\" : \"user\" , \"content\" : \"hi there\" } ] , \"temperature\" : 0.2 }")
	f("user", `{"model":"gpt","user":"u-1","messages":[{"role":"user","content":"hi there"}],"temperature":0.2}`)
	f("stream false", `{"model":"gpt","stream":false,"messages":[{"role":"user","content":"hi there"}],"temperature":0.2}`)
	f("stream_options", `{"model":"gpt","stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi there"}],"temperature":0.2}`)
	f("metadata", `{"model":"gpt","metadata":{"a":"b"},"messages":[{"role":"user","content":"hi there"}],"temperature":0.2}`)
	f("store etc", `{"model":"gpt","store":true,"safety_identifier":"x","prompt_cache_key":"k","prompt_cache_retention":"24h","messages":[{"role":"user","content":"hi there"}],"temperature":0.2}`)
	f("model value", `{"model":"other-spelling","messages":[{"role":"user","content":"hi there"}],"temperature":0.2}`)
}

// TestCanonicalDifferentKey: what must change the key.
func TestCanonicalDifferentKey(t *testing.T) {
	base := `{"model":"gpt","messages":[{"role":"user","content":"hi there"}],"temperature":0.2}`
	a := canon(t, "chat_completions", "gpt", base)
	f := func(name, format, alias, body string) {
		t.Helper()
		if b := canon(t, format, alias, body); a == b {
			t.Errorf("%s: same key %q", name, a)
		}
	}
	f("format", "responses", "gpt", base)
	f("alias", "chat_completions", "gpt-2", base)
	f("content", "chat_completions", "gpt", `{"model":"gpt","messages":[{"role":"user","content":"hi  there"}],"temperature":0.2}`)
	f("temperature", "chat_completions", "gpt", `{"model":"gpt","messages":[{"role":"user","content":"hi there"}],"temperature":0.3}`)
	f("extra field", "chat_completions", "gpt", `{"model":"gpt","messages":[{"role":"user","content":"hi there"}],"temperature":0.2,"max_tokens":5}`)
	f("nested order", "chat_completions", "gpt", `{"model":"gpt","messages":[{"content":"hi there","role":"user"}],"temperature":0.2}`)
	f("escaped quote", "chat_completions", "gpt", `{"model":"gpt","messages":[{"role":"user","content":"hi \" there"}],"temperature":0.2}`)
	// Field boundaries cannot be shifted: the key/value layout is unambiguous.
	if canon(t, "f", "a", `{"ab":"c"}`) == canon(t, "f", "a", `{"a":"bc"}`) {
		t.Error("member boundaries are ambiguous")
	}
}

// TestCanonicalWhitespaceInStrings: spaces inside strings (and after an
// escaped quote) are kept.
func TestCanonicalWhitespaceInStrings(t *testing.T) {
	got := canon(t, "f", "a", `{"x" : [ "a b" , "c\" d" ] }`)
	if !strings.HasSuffix(got, `{"x":["a b","c\" d"]}`) {
		t.Fatalf("got %q", got)
	}
}

func TestCanonicalRejects(t *testing.T) {
	for _, body := range []string{``, `[]`, `"x"`, `{"a":}`, `{"a":1`, `{"a":1}x`} {
		if _, ok := AppendCanonical(nil, "f", "a", []byte(body)); ok {
			t.Errorf("%q keyed", body)
		}
	}
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i <= MaxMembers; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + strings.Repeat("x", i) + `":1`)
	}
	b.WriteString("}")
	if _, ok := AppendCanonical(nil, "f", "a", []byte(b.String())); ok {
		t.Error("a body over MaxMembers members was keyed")
	}
}

func TestSumNamespace(t *testing.T) {
	c := []byte("same")
	a, b := Sum("ns1", c), Sum("ns2", c)
	if a.Hi == b.Hi && a.Lo == b.Lo {
		t.Fatal("namespaces share a key")
	}
	if a2 := Sum("ns1", c); a2 != a {
		t.Fatal("Sum is not deterministic")
	}
	if got := string(a.AppendHex(nil)); len(got) != 32 || strings.Trim(got, "0123456789abcdef") != "" {
		t.Fatalf("hex %q", got)
	}
}
