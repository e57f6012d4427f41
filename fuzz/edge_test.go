package fuzz

import (
	"encoding/json"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

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

// FuzzEdgeRealIP: client-address resolution from X-Forwarded-For behind
// trusted proxies never panics, and a resolved address is either the peer
// or one written in the header (never invented), and never a trusted proxy
// unless every hop is one.
func FuzzEdgeRealIP(f *testing.F) {
	for _, s := range []string{"9.9.9.9", "8.8.8.8, 10.0.0.2", "", "not-an-ip", "2001:db8::1, 10.1.1.1", ",,,", "1.1.1.1,", " 10.0.0.3 "} {
		f.Add(s)
	}
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	f.Fuzz(func(t *testing.T, xff string) {
		var ctx fasthttp.RequestCtx
		ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 1}, nil)
		ctx.Request.Header.Set("X-Forwarded-For", xff)
		r := edge.RealIP{Trusted: trusted, Header: []byte("x-forwarded-for")}
		ip, ok := r.ClientIP(&ctx)
		if !ok {
			return
		}
		if ip.String() == "10.0.0.1" {
			return // the peer
		}
		// netip normalises forms (::ffff:1.2.3.4 is 1.2.3.4): compare parsed parts.
		for _, part := range strings.Split(string(ctx.Request.Header.Peek("X-Forwarded-For")), ",") {
			if a, err := netip.ParseAddr(strings.TrimSpace(part)); err == nil && a.Unmap() == ip {
				return
			}
		}
		t.Fatalf("resolved %s, which is not in %q", ip, xff)
	})
}
