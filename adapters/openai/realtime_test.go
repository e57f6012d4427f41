package openai

import (
	"errors"
	"testing"

	"gw/adapters"
	"gw/adapters/headers"
)

func TestRealtimeTarget(t *testing.T) {
	for _, tc := range []struct {
		name, base, key string
		azure           bool
		url, auth       string
		err             error
	}{
		{"default base", "", "sk-1", false, "wss://api.openai.com/v1/realtime?model=gpt-4o-realtime%2Bx", "Bearer sk-1", nil},
		{"http base keeps its query", "http://127.0.0.1:9/v1/?tenant=a", "sk-1", false, "ws://127.0.0.1:9/v1/realtime?tenant=a&model=gpt-4o-realtime%2Bx", "Bearer sk-1", nil},
		{"user-info authenticates", "https://u:p@proxy.example/v1", "sk-1", false, "wss://u:p@proxy.example/v1/realtime?model=gpt-4o-realtime%2Bx", "", nil},
		{"no key", "https://x.example/v1", "", false, "wss://x.example/v1/realtime?model=gpt-4o-realtime%2Bx", "", nil},
		{"azure not served", "https://r.openai.azure.com", "k", true, "", "", adapters.ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := &adapters.KeyConfig{Name: "pk", BaseURL: tc.base, Headers: headers.Config{ForwardClientHeaders: []string{"x-trace-*"}}}
			if tc.key != "" {
				k.Credential = adapters.NewSecret(tc.key)
			}
			a, err := newAdapter(k, &Config{}, adapters.Options{}, tc.azure)
			if err != nil {
				t.Fatal(err)
			}
			got, err := a.RealtimeTarget("gpt-4o-realtime+x")
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v; want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if got.URL != tc.url || got.AuthValue != tc.auth || (tc.auth != "") != (got.AuthHeader == "Authorization") {
				t.Fatalf("got %+v; want url %s auth %q", got, tc.url, tc.auth)
			}
			if !got.Forward([]byte("X-Trace-Id")) || got.Forward([]byte("authorization")) {
				t.Fatal("forward rules not those of the key")
			}
		})
	}
}
