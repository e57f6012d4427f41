package gateway

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func withEnv(t *testing.T, env map[string]string) {
	old := lookupEnv
	lookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	t.Cleanup(func() { lookupEnv = old })
}

func TestResolveRef(t *testing.T) {
	withEnv(t, map[string]string{"KEY": "s3cret", "JSON": `{"user":"jack","n":1}`, "EMPTY": ""})
	for _, tc := range []struct {
		in, want, err string
		ref           bool
	}{
		{"plain", "plain", "", false},
		{"$env://KEY", "s3cret", "", true},
		{"$env://EMPTY", "", "", true},
		{"$env://JSON/user", "jack", "", true},
		{"$env://JSON/n", "", `no string member "n"`, true},
		{"$env://KEY/user", "", "not a JSON object", true},
		{"$env://NOPE", "", "$env://NOPE: the environment variable is not set", true},
		{"$env://", "", "no variable name", true},
		{"$secret://vault/1/key", "", "secret manager vault: not built in this build", true},
		{"$secret://aws/1/key", "", "secret manager aws: not built in this build", true},
		{"$secret://gcp/1/key", "", "secret manager gcp: not built in this build", true},
		{"$secret://other/1/key", "", "unknown secret manager", true},
	} {
		got, ref, err := ResolveRef(tc.in)
		if ref != tc.ref || (tc.err == "" && (err != nil || got != tc.want)) || (tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err))) {
			t.Errorf("%s: got %q %v %v; want %q %v %q", tc.in, got, ref, err, tc.want, tc.ref, tc.err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: error %q holds the secret value", tc.in, err)
		}
	}
	if _, _, err := ResolveRef("$secret://vault/1/k"); !errors.Is(err, ErrSecretNotBuilt) {
		t.Errorf("vault: %v; want ErrSecretNotBuilt", err)
	}
}

func TestResolvePlugins(t *testing.T) {
	withEnv(t, map[string]string{"KEY": "k-1", "HDR": `{"v":"Bearer x"}`})
	in := Plugins{
		"key-auth":      json.RawMessage(`{"key":"$env://KEY"}`),
		"proxy-rewrite": json.RawMessage(`{"headers":{"set":{"Authorization":"$env://HDR/v","X":["$env://KEY","lit"]}}}`),
		"plain":         json.RawMessage(`{"n":1.50}`),
	}
	out, err := resolvePlugins(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(out["key-auth"]) != `{"key":"k-1"}` || string(out["plain"]) != `{"n":1.50}` ||
		string(out["proxy-rewrite"]) != `{"headers":{"set":{"Authorization":"Bearer x","X":["k-1","lit"]}}}` {
		t.Fatalf("got %s", out)
	}
	if string(in["key-auth"]) != `{"key":"$env://KEY"}` {
		t.Fatal("the input was changed")
	}
	_, err = resolvePlugins(Plugins{"p": json.RawMessage(`{"a":{"b":["$env://NOPE"]}}`)})
	if err == nil || !strings.Contains(err.Error(), "plugin p: a.b[0]: reference $env://NOPE") {
		t.Fatalf("got %v", err)
	}
}

func TestCompileResolvesReferences(t *testing.T) {
	withEnv(t, map[string]string{"JACK_KEY": "k-jack"})
	st := NewState("/gw")
	put(st, "/gw/consumers/jack", `{"username":"jack","plugins":{"key-auth":{"key":"$env://JACK_KEY"}}}`, 1)
	put(st, "/gw/consumers/bad", `{"username":"bad","plugins":{"key-auth":{"key":"$env://NOPE"}}}`, 1)
	put(st, "/gw/global_rules/1", `{"id":"1","plugins":{"proxy-rewrite":{"headers":{"set":{"X":"$secret://vault/1/x"}}}}}`, 1)
	s := Compile(st, 1)
	if s.Auth["key-auth"]["k-jack"] == nil || s.Consumers["bad"] != nil {
		t.Fatalf("auth index %v, consumers %v", s.Auth, s.Consumers)
	}
	if len(s.GlobalRules) != 1 || !strings.Contains(s.GlobalRules[0].Err, "secret manager vault: not built") {
		t.Fatalf("global rules %+v", s.GlobalRules)
	}
	if len(s.Errors) != 2 {
		t.Fatalf("errors %v; want the bad consumer's and the global rule's", s.Errors)
	}
}
