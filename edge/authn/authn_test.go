package authn

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin/resources"
	"gw/admin/snapshot"
)

// TestCredential: the credential and which credential headers carried
// anything (Presented), for each header alone and both together.
func TestCredential(t *testing.T) {
	f := func(hdrs []string, want string, wantAuth, wantXKey bool) {
		t.Helper()
		var h fasthttp.RequestHeader
		for i := 0; i+1 < len(hdrs); i += 2 {
			h.Set(hdrs[i], hdrs[i+1])
		}
		if got := string(Credential(&h)); got != want {
			t.Fatalf("%q -> %q; want %q", hdrs, got, want)
		}
		key, auth, xkey := Presented(&h)
		if string(key) != want || auth != wantAuth || xkey != wantXKey {
			t.Fatalf("Presented(%q) = %q %v %v; want %q %v %v", hdrs, key, auth, xkey, want, wantAuth, wantXKey)
		}
	}
	f([]string{"Authorization", "Bearer abc"}, "abc", true, false)
	f([]string{"Authorization", "bearer  abc "}, "abc", true, false)
	f([]string{"Authorization", "Basic abc"}, "", true, false)
	f([]string{"x-api-key", "k1"}, "k1", false, true)
	f([]string{"Authorization", "Bearer abc", "X-Api-Key", "k1"}, "abc", true, true)
	f([]string{"Authorization", "Basic abc", "x-api-key", "k1"}, "k1", true, true)
	f(nil, "", false, false)
}

const keysFile = `_format_version: "1"
api_keys:
  - {display_name: ok, key_env: OK, allowed_models: ["*"]}
  - {display_name: off, key_env: OFF, allowed_models: ["*"], disabled: true}
  - {display_name: old, key_env: OLD, allowed_models: ["*"], expires_at: "2020-01-01T00:00:00Z"}
`

func snap(tb testing.TB) *snapshot.Snapshot {
	tb.Helper()
	env := map[string]string{"OK": "key-ok", "OFF": "key-off", "OLD": "key-old"}
	r := resources.Load([]byte(keysFile), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err := r.Err(); err != nil {
		tb.Fatal(err)
	}
	s, err := snapshot.Compile(r.Resources, snapshot.DefaultOptions())
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func TestAuthenticate(t *testing.T) {
	s := snap(t)
	f := func(auth string, wantName string, wantFail *Failure) {
		t.Helper()
		var h fasthttp.RequestHeader
		if auth != "" {
			h.Set("Authorization", "Bearer "+auth)
		}
		c, fail := Authenticate(&h, s, time.Now())
		if fail != wantFail || (c == nil) != (wantName == "") || (c != nil && c.Key.DisplayName != wantName) {
			t.Fatalf("%q: got %v %v; want %q %v", auth, c, fail, wantName, wantFail)
		}
	}
	f("key-ok", "ok", nil)
	f("", "", Missing)
	f("key-ok-x", "", Invalid)
	f("key-off", "", Disabled)
	f("key-old", "", Expired)
}

// BenchmarkAuthenticate: a caller-key lookup (SHA-256 and a map read).
func BenchmarkAuthenticate(b *testing.B) {
	s := snap(b)
	var h fasthttp.RequestHeader
	h.Set("Authorization", "Bearer key-ok")
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if c, _ := Authenticate(&h, s, now); c == nil {
			b.Fatal("rejected")
		}
	}
}

var keyHeader fasthttp.RequestHeader

func authKey(s *snapshot.Snapshot, key string) bool {
	keyHeader.Set("Authorization", "Bearer "+key)
	c, _ := Authenticate(&keyHeader, s, time.Now())
	return c != nil
}
