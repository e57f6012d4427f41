package fuzz

import (
	"encoding/json"
	"testing"

	"gw/admin/resources"
	"gw/edge"
)

// FuzzEdgeChatRequest: the chat body scanner never panics and agrees with
// encoding/json on the fields policy reads.
func FuzzEdgeChatRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"a","messages":[{"role":"user","content":"x"}]}`,
		`{"model":"a","stream":true,"stream_options":{"include_usage":true},"messages":[]}`,
		`{"model":"a\u0062","messages":[{"role":"User"}]}`,
		`{"model":"a","model":"b","messages":[]}`, `[]`, `{`, `{"model":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		info, err := edge.ParseChatRequest(body)
		if err != nil {
			return
		}
		var ref struct {
			Model  string `json:"model"`
			Stream *bool  `json:"stream"`
		}
		if json.Unmarshal(body, &ref) != nil {
			t.Fatalf("accepted a body encoding/json rejects: %q", body)
		}
		if ref.Model != info.Model {
			t.Fatalf("model %q; encoding/json says %q", info.Model, ref.Model)
		}
		if ref.Stream != nil && *ref.Stream != info.Stream {
			t.Fatalf("stream %v; encoding/json says %v", info.Stream, *ref.Stream)
		}
	})
}

// FuzzResourcesGlob: GlobMatch agrees with a direct definition.
func FuzzResourcesGlob(f *testing.F) {
	f.Add("team-*", "team-a")
	f.Add("*", "")
	f.Add("a*a", "a")
	f.Fuzz(func(t *testing.T, g, name string) {
		got := resources.GlobMatch(g, name)
		want := false
		star := -1
		for i := 0; i < len(g); i++ {
			if g[i] == '*' {
				star = i
				break
			}
		}
		if star < 0 {
			want = g == name
		} else {
			pre, suf := g[:star], g[star+1:]
			want = len(name) >= len(pre)+len(suf) && name[:len(pre)] == pre && name[len(name)-len(suf):] == suf
		}
		if got != want {
			t.Fatalf("GlobMatch(%q, %q) = %v; want %v", g, name, got, want)
		}
	})
}
