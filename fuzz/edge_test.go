package fuzz

import (
	"encoding/json"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin/resources"
	"gw/edge"
	"gw/sse/rawjson"
)

// FuzzEdgeChatRequest: the chat body scanner never panics and agrees with
// encoding/json on the fields policy reads.
func FuzzEdgeChatRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"a","messages":[{"role":"user","content":"x"}]}`,
		`{"model":"a","stream":true,"stream_options":{"include_usage":true},"messages":[]}`,
		`{"model":"a\u0062","messages":[{"role":"User"}]}`,
		`{"model":"a","model":"b","messages":[]}`, `[]`, `{`, `{"model":null}`,
		`{"model":"a","streAm":true,"00000000":{"0000000000000":true},"messages":[]}`,
		`{"Model":"a","MESSAGES":[{"ROLE":"user"}]}`, `{"model":"a","Model":"b","messages":[]}`,
		`{"model":"a","messages":[{"role":"user","Role":"x"}]}`, `{"\u017ftream":true,"model":"a","messages":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		info, err := edge.ParseChatRequest(body)
		// The one-pass scanner against the same rules built from the
		// package's slower pieces: validation, then each member read apart.
		refInfo, refErr := refChatRequest(body)
		if errText(err) != refErr || info != refInfo {
			t.Fatalf("%q: scanner %+v %q; reference %+v %q", body, info, errText(err), refInfo, refErr)
		}
		if err != nil {
			return
		}
		// Member names match as encoding/json fills a struct (without
		// case; the last duplicate wins), as a Go upstream reads the body;
		// a body with two spellings of one name was refused above.
		var req struct {
			Model    json.RawMessage `json:"model"`
			Stream   json.RawMessage `json:"stream"`
			Messages []struct {
				Role json.RawMessage `json:"role"`
			} `json:"messages"`
		}
		if json.Unmarshal(body, &req) != nil {
			t.Fatalf("accepted a body encoding/json rejects: %q", body)
		}
		var model string
		if req.Model != nil && json.Unmarshal(req.Model, &model) != nil {
			t.Fatalf("accepted a model encoding/json rejects: %q", body)
		}
		if model != info.Model {
			t.Fatalf("model %q; encoding/json says %q", info.Model, model)
		}
		var stream *bool
		if req.Stream != nil && json.Unmarshal(req.Stream, &stream) != nil {
			t.Fatalf("accepted a stream encoding/json rejects: %q", body)
		}
		if stream != nil && *stream != info.Stream {
			t.Fatalf("stream %v; encoding/json says %v", info.Stream, *stream)
		}
		// The first message whose role (the last duplicate) is not one of
		// the spec's strings.
		bad := -1
		for i, m := range req.Messages {
			var role string
			if m.Role == nil || json.Unmarshal(m.Role, &role) != nil || !slices.Contains([]string{"user", "assistant", "system", "developer", "tool"}, role) {
				bad = i
				break
			}
		}
		if bad != info.BadRole {
			t.Fatalf("bad role at %d; encoding/json says %d: %q", info.BadRole, bad, body)
		}
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// refChatRequest is ParseChatRequest in separate passes: Valid and
// ScanTop, then ForEachElem and ForEachKey over the messages.
func refChatRequest(body []byte) (edge.ChatInfo, string) {
	info := edge.ChatInfo{BadRole: -1}
	const notJSON = "We could not parse the JSON body of your request. The body must be a JSON object."
	if rawjson.KindOf(body) != rawjson.Object {
		return info, notJSON
	}
	var vals [4][]byte
	valid, folded := rawjson.ValidNames(body)
	if !valid || rawjson.ScanTop(body, []string{"model", "stream", "stream_options", "messages"}, vals[:]) != nil {
		return info, notJSON
	}
	if folded != nil {
		return info, rawjson.Folded(folded).Error()
	}
	model, stream, opts, msgs := vals[0], vals[1], vals[2], vals[3]
	if model == nil {
		return edge.ChatInfo{BadRole: -1}, "you must provide a model parameter"
	}
	m, err := rawjson.AppendUnquote(nil, model)
	if rawjson.KindOf(model) != rawjson.String || err != nil {
		return edge.ChatInfo{BadRole: -1}, "model must be a string"
	}
	switch rawjson.KindOf(stream) {
	case rawjson.True, rawjson.False, rawjson.Null, rawjson.Invalid:
	default:
		return edge.ChatInfo{BadRole: -1}, "stream must be a boolean"
	}
	info = edge.ChatInfo{Model: string(m), Stream: rawjson.KindOf(stream) == rawjson.True, BadRole: -1}
	if v, _, ok := rawjson.Get(opts, "include_usage"); ok && rawjson.KindOf(opts) == rawjson.Object {
		info.IncludeUsage = rawjson.KindOf(v) == rawjson.True
	}
	switch {
	case msgs == nil:
		return edge.ChatInfo{BadRole: -1}, "you must provide a messages parameter"
	case rawjson.KindOf(msgs) != rawjson.Array:
		return edge.ChatInfo{BadRole: -1}, "messages must be an array"
	}
	notObject := false
	_ = rawjson.ForEachElem(msgs, func(i int, msg []byte, k rawjson.Kind) bool {
		if k != rawjson.Object {
			notObject = true
			return false
		}
		var role []byte
		_ = rawjson.ForEachKey(msg, func(key, v []byte, _ rawjson.Kind) bool {
			if k, err := rawjson.AppendUnquote(nil, key); err == nil && strings.EqualFold(string(k), "role") {
				role = v
			}
			return true
		})
		r, err := rawjson.AppendUnquote(nil, role)
		if rawjson.KindOf(role) != rawjson.String || err != nil ||
			!slices.Contains([]string{"user", "assistant", "system", "developer", "tool"}, string(r)) {
			info.BadRole = i
			return false
		}
		return true
	})
	if notObject {
		return edge.ChatInfo{BadRole: -1}, "each message must be an object"
	}
	return info, ""
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

// framingRef is a naive reading of RFC 9112's rules for a header block:
// a folded line, a Transfer-Encoding that is not exactly chunked, two
// Transfer-Encodings, or Transfer-Encoding with Content-Length.
func framingRef(block string) bool {
	te, cl := 0, false
	for i, line := range strings.Split(block, "\n") {
		if line != "" && (line[0] == ' ' || line[0] == '\t') && (i > 0 || len(line) > 0) {
			return true
		}
		name, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "transfer-encoding":
			te++
			if !strings.EqualFold(strings.TrimSpace(val), "chunked") {
				return true
			}
		case "content-length":
			cl = true
		}
	}
	return te > 1 || (te > 0 && cl)
}

// FuzzEdgeRequestFraming drives the real listener with arbitrary header
// blocks followed by a chunked terminator and a second, hidden request.
// Whatever the bytes: no panic, BadFraming agrees with the naive reference,
// and an ambiguous request gets exactly one answer, a 400, after which the
// connection is closed (the hidden request is never served).
func FuzzEdgeRequestFraming(f *testing.F) {
	for _, s := range []string{
		"Content-Length: 5\r\nTransfer-Encoding: chunked",
		"Transfer-Encoding: chunked\r\nContent-Length: 5",
		"transfer-encoding: gzip, chunked",
		"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked",
		"Content-Length: 5\r\nContent-Length: 5",
		"X-A: a\r\n b\r\nContent-Length: 5",
		"Transfer-Encoding: chunked",
		"Content-Length: 5",
		"TRANSFER-ENCODING: CHUNKED\r\nCONTENT-LENGTH: 0",
	} {
		f.Add(s)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	srv := edge.NewServer(nil, nil, false, edge.Limits{MaxBodyBytes: 1 << 20, HeaderTimeout: 200 * time.Millisecond,
		BodyTimeout: 200 * time.Millisecond, IdleTimeout: 200 * time.Millisecond}, nil)
	go srv.Serve(ln) //nolint:errcheck
	f.Cleanup(func() { _ = srv.Shutdown(time.Second) })
	f.Fuzz(func(t *testing.T, block string) {
		if strings.Contains(block, "\n\n") || strings.Contains(block, "\n\r\n") || strings.HasPrefix(block, "\n") || strings.HasPrefix(block, "\r") ||
			strings.HasSuffix(block, "\r") || len(block) > 2048 {
			return // the block must stay one header block
		}
		bad := edge.BadFraming([]byte(strings.ReplaceAll(block, "\r\n", "\n")))
		if bad != framingRef(strings.ReplaceAll(block, "\r\n", "\n")) {
			t.Fatalf("BadFraming(%q) = %v; the reference disagrees", block, bad)
		}
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		hidden := "GET /hidden HTTP/1.1\r\nHost: h\r\n\r\n"
		conn.Write([]byte("POST /v1/x HTTP/1.1\r\nHost: gw\r\n" + block + "\r\n\r\n0\r\n\r\n" + hidden)) //nolint:errcheck
		conn.SetReadDeadline(time.Now().Add(time.Second))
		out, _ := io.ReadAll(conn)
		if bad && (strings.Count(string(out), "HTTP/1.1 ") != 1 || !strings.HasPrefix(string(out), "HTTP/1.1 400")) {
			t.Fatalf("ambiguous block %q: want one 400 and a close, got:\n%s", block, out)
		}
	})
}
