package load

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestPrepareBody(t *testing.T) {
	f := func(body, model string, stream bool, want string) {
		t.Helper()
		var in []byte
		if body != "" {
			in = []byte(body)
		}
		got, err := prepareBody(in, FormatChat.spec(), model, stream)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("prepareBody(%s, %q, %v) = %s; want %s", body, model, stream, got, want)
		}
	}
	f(`{"model":"a","messages":[]}`, "", false, `{"model":"a","messages":[]}`)
	f(`{"model":"a","messages":[]}`, "b", true, `{"model":"b","messages":[],"stream":true}`)
	f(`{"model":"a","stream":true,"stream_options":{"include_usage":true}}`, "", false, `{"model":"a","stream":false}`)
	f(`{"model":"a","stream":false}`, "", true, `{"model":"a","stream":true}`)

	// The built-in bodies: ~1 KB of valid JSON with the format's members.
	builtIn := func(f Format, model string, stream bool, members ...string) {
		t.Helper()
		def, err := prepareBody(nil, f.spec(), "", stream)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(def, &m); err != nil {
			t.Fatalf("%s built-in body: %v: %s", f, err, def)
		}
		if n := len(def); n < 900 || n > 1200 || m["model"] != model || (m["stream"] == true) != stream {
			t.Fatalf("%s built-in body (%d bytes): %s; want ~1 KB, model %s, stream %v", f, n, def, model, stream)
		}
		for _, k := range members {
			if _, ok := m[k]; !ok {
				t.Fatalf("%s built-in body lacks %q: %s", f, k, def)
			}
		}
	}
	builtIn(FormatChat, "gpt-4o", true, "messages", "max_tokens")
	builtIn(FormatMessages, "claude-sonnet-4-5", true, "messages", "max_tokens", "system")
	builtIn(FormatResponses, "gpt-4o", true, "input", "instructions")
	builtIn(FormatResponses, "gpt-4o", false, "input")
	if !bytes.Equal(DefaultBody[:len(`{"model":"gpt-4o",`)], []byte(`{"model":"gpt-4o",`)) ||
		bytes.Contains(DefaultMessagesBody, []byte(`"role":"system"`)) {
		t.Fatalf("built-in bodies:\n%s\n%s", DefaultBody, DefaultMessagesBody)
	}
}

func TestParseTarget(t *testing.T) {
	f := func(in, addr, uri string, isTLS bool) {
		t.Helper()
		got, err := parseTarget(in, FormatChat.spec().path)
		if err != nil {
			t.Fatal(err)
		}
		if got.addr != addr || got.uri != uri || got.isTLS != isTLS {
			t.Fatalf("parseTarget(%q) = %+v; want addr %q, uri %q, tls %v", in, got, addr, uri, isTLS)
		}
	}
	f("http://127.0.0.1:8080/v1", "127.0.0.1:8080", "http://127.0.0.1:8080/v1/chat/completions", false)
	f("http://127.0.0.1:8080/v1/", "127.0.0.1:8080", "http://127.0.0.1:8080/v1/chat/completions", false)
	f("http://mock:8090", "mock:8090", "http://mock:8090/chat/completions", false)
	f("https://api.example.com/openai/v1/chat/completions?api-version=2", "api.example.com:443",
		"https://api.example.com/openai/v1/chat/completions?api-version=2", true)
	f("http://[::1]/knobs/chunks=50/v1", "[::1]:80", "http://[::1]/knobs/chunks=50/v1/chat/completions", false)

	g := func(in string, format Format, uri string) {
		t.Helper()
		got, err := parseTarget(in, format.spec().path)
		if err != nil {
			t.Fatal(err)
		}
		if got.uri != uri {
			t.Fatalf("parseTarget(%q, %s) = %+v; want uri %q", in, format, got, uri)
		}
	}
	g("http://127.0.0.1:8080/v1", FormatMessages, "http://127.0.0.1:8080/v1/messages")
	g("http://127.0.0.1:8080/anthropic/v1/messages", FormatMessages, "http://127.0.0.1:8080/anthropic/v1/messages")
	g("http://127.0.0.1:8080/v1/", FormatResponses, "http://127.0.0.1:8080/v1/responses")
	g("http://127.0.0.1:8080/v1/responses", FormatResponses, "http://127.0.0.1:8080/v1/responses")
}

func TestRequestTemplate(t *testing.T) {
	f := func(format Format, headers []Header, want, absent []string) {
		t.Helper()
		cfg, err := Config{Target: "http://127.0.0.1:1/v1", Format: format, APIKey: "sk-1", Headers: headers}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		tg, err := parseTarget(cfg.Target, cfg.Format.spec().path)
		if err != nil {
			t.Fatal(err)
		}
		req, err := newRequestTemplate(&cfg, tg)
		if err != nil {
			t.Fatal(err)
		}
		hdr := strings.ToLower(req.Header.String())
		for _, w := range want {
			if !strings.Contains(hdr, strings.ToLower(w)+"\r\n") {
				t.Fatalf("%s: headers lack %q:\n%s", format, w, hdr)
			}
		}
		for _, a := range absent {
			if strings.Contains(hdr, strings.ToLower(a)) {
				t.Fatalf("%s: headers hold %q:\n%s", format, a, hdr)
			}
		}
	}
	f("", nil, []string{"POST http://127.0.0.1:1/v1/chat/completions HTTP/1.1", "Authorization: Bearer sk-1"}, []string{"x-api-key", "anthropic-version"})
	f(FormatResponses, nil, []string{"/v1/responses HTTP/1.1", "Authorization: Bearer sk-1"}, []string{"x-api-key"})
	f(FormatMessages, nil, []string{"/v1/messages HTTP/1.1", "X-Api-Key: sk-1", "Anthropic-Version: 2023-06-01"},
		[]string{"authorization"})
	// Headers given by the caller replace the built-in Anthropic ones.
	f(FormatMessages, []Header{{"anthropic-version", "2099-01-01"}, {"X-API-Key", "sk-2"}},
		[]string{"anthropic-version: 2099-01-01", "X-API-Key: sk-2"}, []string{"2023-06-01", "sk-1"})
}
