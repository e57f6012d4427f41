package edge

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/sse/rawjson"
)

func TestParseChatRequest(t *testing.T) {
	f := func(body string, want ChatInfo, wantErr string) {
		t.Helper()
		got, err := ParseChatRequest([]byte(body))
		if wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), wantErr) {
				t.Fatalf("%s: err = %v; want %q", body, err, wantErr)
			}
			return
		}
		if err != nil || got != want {
			t.Fatalf("%s: got %+v, %v; want %+v", body, got, err, want)
		}
	}
	f(`{"model":"a","messages":[{"role":"user","content":"x"}]}`, ChatInfo{Model: "a", BadRole: -1}, "")
	f(`{"model":"a","stream":true,"stream_options":{"include_usage":true},"messages":[]}`, ChatInfo{Model: "a", Stream: true, IncludeUsage: true, BadRole: -1}, "")
	f(`{"model":"a\u002fb","messages":[]}`, ChatInfo{Model: "a/b", BadRole: -1}, "")
	for i, role := range []string{"system", "developer", "user", "assistant", "tool"} {
		_ = i
		f(`{"model":"a","messages":[{"role":"`+role+`"}]}`, ChatInfo{Model: "a", BadRole: -1}, "")
	}
	f(`{"model":"a","messages":[{"role":"user"},{"role":"User"}]}`, ChatInfo{Model: "a", BadRole: 1}, "")
	f(`{"model":"a","messages":[{"role":"function"}]}`, ChatInfo{Model: "a", BadRole: 0}, "")
	f(`{"model":"a","messages":[{"content":"no role"}]}`, ChatInfo{Model: "a", BadRole: 0}, "")
	f(`{"model":"a","messages":[{"role":1}]}`, ChatInfo{Model: "a", BadRole: 0}, "")
	f(`{"model":"a","messages":[{"r\u006fle":"us\u0065r","thinking_blocks":[]}]}`, ChatInfo{Model: "a", BadRole: -1}, "")
	f(`{"model":"a","messages":[{"role":"user","role":"User"}]}`, ChatInfo{Model: "a", BadRole: 0}, "")
	f(`{"model":"a","messages":[{"role":"user"},{"role":"tool"},{"role":"us\u0045r"}]}`, ChatInfo{Model: "a", BadRole: 2}, "")
	f(`{"messages":[]}`, ChatInfo{}, "model parameter")
	f(`{"model":5,"messages":[]}`, ChatInfo{}, "model must be a string")
	f(`{"model":"a"}`, ChatInfo{}, "messages parameter")
	f(`{"model":"a","messages":{}}`, ChatInfo{}, "messages must be an array")
	f(`{"model":"a","messages":[1]}`, ChatInfo{}, "each message must be an object")
	f(`{"model":"a","stream":"yes","messages":[]}`, ChatInfo{}, "stream must be a boolean")
	f(`[1]`, ChatInfo{}, "JSON body")
	f(`{"model":"a",`, ChatInfo{}, "JSON body")
}

func TestRealIP(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	f := func(peer, xff string, trust []netip.Prefix, want string, wantOK bool) {
		t.Helper()
		var ctx fasthttp.RequestCtx
		ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.ParseIP(peer), Port: 1}, nil)
		if xff != "" {
			ctx.Request.Header.Set("X-Forwarded-For", xff)
		}
		r := RealIP{Trusted: trust, Header: []byte("x-forwarded-for")}
		got, ok := r.ClientIP(&ctx)
		if ok != wantOK || (ok && got.String() != want) {
			t.Fatalf("peer %s xff %q: got %v %v; want %s %v", peer, xff, got, ok, want, wantOK)
		}
	}
	f("1.2.3.4", "9.9.9.9", nil, "1.2.3.4", true)                // untrusted peer: header ignored
	f("10.0.0.1", "9.9.9.9", trusted, "9.9.9.9", true)           // trusted proxy: header believed
	f("10.0.0.1", "8.8.8.8, 10.0.0.2", trusted, "8.8.8.8", true) // right-most untrusted hop
	f("10.0.0.1", "", trusted, "10.0.0.1", true)                 // no header: the peer
	f("10.0.0.1", "not-an-ip", trusted, "", false)               // malformed: unknown client
	f("10.0.0.1", "2001:db8::1", trusted, "2001:db8::1", true)   // IPv6
}

func TestCIDRAllowed(t *testing.T) {
	list := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::/32")}
	if !cidrAllowed(nil, netip.Addr{}, false) {
		t.Fatal("empty list must allow all, even an unknown address")
	}
	if cidrAllowed(list, netip.Addr{}, false) {
		t.Fatal("unknown address must be rejected when a list is set")
	}
	if !cidrAllowed(list, netip.MustParseAddr("10.1.2.3"), true) || !cidrAllowed(list, netip.MustParseAddr("2001:db8::5"), true) {
		t.Fatal("listed address rejected")
	}
	if cidrAllowed(list, netip.MustParseAddr("11.0.0.1"), true) {
		t.Fatal("unlisted address allowed")
	}
}

func TestHasContent(t *testing.T) {
	f := func(chunk string, want bool) {
		t.Helper()
		if got := hasContent([]byte(chunk)); got != want {
			t.Fatalf("%s: %v; want %v", chunk, got, want)
		}
	}
	f(`{"choices":[{"delta":{"role":"assistant","content":""}}]}`, false)
	f(`{"choices":[{"delta":{"content":"hi"}}]}`, true)
	f(`{"Choices":[{"Delta":{"Content":"hi"}}]}`, true) // names as a Go client reads them
	f(`{"choices":[{"delta":{"\u0072efusal":"no"}}]}`, true)
	f(`{"choices":[{"delta":{"contents":"hi"}}]}`, false)
	f(`{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}`, true)
	f(`{"choices":[{"delta":{},"finish_reason":"stop"}]}`, true)
	f(`{"choices":[{"delta":{"reasoning_content":"think"}}]}`, true)
	f(`{"choices":[],"usage":{"total_tokens":3}}`, false)
}

func TestLooksLikeObject(t *testing.T) {
	for in, want := range map[string]bool{`{"a":1}`: true, " {}\n": true, "": false, "   ": false, "<html></html>": false,
		"{": false, "}": false, "[1]": false, "plain text": false, "{\"a\"": false} {
		if got := looksLikeObject([]byte(in)); got != want {
			t.Errorf("%q: %v; want %v", in, got, want)
		}
	}
}

// TestChatScanThinkingBlocks: the scan notes whether a message carries
// thinking_blocks, for the body it read only; BuildChat then skips its own
// search of that body.
func TestChatScanThinkingBlocks(t *testing.T) {
	for _, tc := range []struct {
		body string
		none bool
	}{
		{`{"model":"a","messages":[{"role":"user","content":"x"}]}`, true},
		{`{"model":"a","messages":[{"role":"user","content":"\"thinking_blocks\""}]}`, true},
		{`{"model":"a","thinking_blocks":[],"messages":[{"role":"user"}]}`, true},
		{`{"model":"a","messages":[{"role":"user"},{"role":"assistant","content":"x","thinking_blocks":[{"type":"thinking"}]}]}`, false},
		{`{"model":"a","messages":[{"thinking_blocks":null,"role":"assistant"}]}`, false},
	} {
		body := []byte(tc.body)
		var cr chatRequest
		if bad, err := scanChatRequest(body, &cr); bad >= 0 || err != nil {
			t.Fatalf("%s: bad %d, err %v", tc.body, bad, err)
		}
		if got := cr.shape(body).NoThinkingBlocks; got != tc.none {
			t.Errorf("%s: NoThinkingBlocks = %v; want %v", tc.body, got, tc.none)
		}
		if cr.shape(append([]byte(nil), body...)).NoThinkingBlocks {
			t.Errorf("%s: a copy of the body counts as scanned", tc.body)
		}
	}
	var cr chatRequest
	if _, err := scanChatRequest([]byte(`{"model":"a","messages":[{"role":"bad"}]}`), &cr); err != nil || cr.scanned != nil {
		t.Fatal("a rejected body counts as scanned")
	}
	// A rescan forgets what the last one found.
	if _, err := scanChatRequest([]byte(`{"model":"a","messages":[]}`), &cr); err != nil || cr.modelRaw == nil {
		t.Fatal("no model span for a body with one model member")
	}
	if _, err := scanChatRequest([]byte(`{"model":"a","model":"b","messages":[]}`), &cr); err != nil || cr.modelRaw != nil || cr.scanned == nil {
		t.Fatal("a rescan kept the model span of the previous body")
	}
	// The model member's value is passed on only when it occurs once.
	for body, want := range map[string]string{
		`{"model":"a","messages":[]}`:             `"a"`,
		`{"messages":[],"model" : "a\u0062" }`:    `"a\u0062"`,
		`{"model":"x","messages":[],"model":"a"}`: "",
	} {
		b := []byte(body)
		var cr chatRequest
		if _, err := scanChatRequest(b, &cr); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		sh := cr.shape(b)
		if string(sh.Model) != want || (want != "" && rawjson.Offset(b, sh.Model) < 0) {
			t.Fatalf("%s: shape model %q; want %q within the body", body, sh.Model, want)
		}
		if cr.shape(append([]byte(nil), b...)).Model != nil {
			t.Fatalf("%s: a copy of the body has a shape", body)
		}
	}
}
