package balancer_test

import (
	"errors"
	"testing"

	"gw/balancer"
)

type keySource struct {
	headers, cookies map[string]string
	apiKey, ip       string
}

func (k *keySource) Header(name string) []byte { return []byte(k.headers[name]) }
func (k *keySource) Cookie(name string) []byte { return []byte(k.cookies[name]) }
func (k *keySource) APIKey() []byte            { return []byte(k.apiKey) }
func (k *keySource) ClientIP() []byte          { return []byte(k.ip) }

func TestHashKey(t *testing.T) {
	src := &keySource{
		headers: map[string]string{"x-gw-routing-key": "rk", "x-user": "u1"},
		cookies: map[string]string{"session": "s1"},
		apiKey:  "key-hash",
		ip:      "10.0.0.1",
	}
	f := func(sources []balancer.HashSource, src *keySource, want string) {
		t.Helper()
		if got := string(balancer.HashKey(sources, src)); got != want {
			t.Fatalf("HashKey(%v): got %q; want %q", sources, got, want)
		}
	}
	mk := func(typ, name string) balancer.HashSource {
		s, err := balancer.ParseHashSource(typ, name)
		if err != nil {
			t.Fatalf("ParseHashSource(%q): %s", typ, err)
		}
		return s
	}
	f(nil, src, "rk") // default: routing-key header first
	f([]balancer.HashSource{mk("cookie", "session"), mk("api_key", "")}, src, "s1")
	f([]balancer.HashSource{mk("header", "x-none"), mk("client_ip", "ignored")}, src, "10.0.0.1")
	f([]balancer.HashSource{mk("header", "x-none"), mk("cookie", "none")}, src, "")

	noHeader := *src
	noHeader.headers = nil
	f(nil, &noHeader, "key-hash") // default: then the API key
	noHeader.apiKey = ""
	f(nil, &noHeader, "")

	if _, err := balancer.ParseHashSource("query", "q"); !errors.Is(err, balancer.ErrHashSource) {
		t.Fatalf("ParseHashSource(query): got %v; want ErrHashSource", err)
	}
}
