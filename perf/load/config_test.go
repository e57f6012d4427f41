package load

import (
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
		got, err := prepareBody(in, model, stream)
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

	def, err := prepareBody(nil, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(def); n < 900 || n > 1200 || !strings.HasPrefix(string(def), `{"model":"gpt-4o",`) ||
		!strings.HasSuffix(string(def), `"stream":true}`) {
		t.Fatalf("built-in body (%d bytes): %s", n, def)
	}
}

func TestParseTarget(t *testing.T) {
	f := func(in, addr, uri string, isTLS bool) {
		t.Helper()
		got, err := parseTarget(in)
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
}
