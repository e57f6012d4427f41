package fuzz

import (
	"bytes"
	"encoding/json"
	"testing"

	"gw/edge/a2a"
	"gw/edge/passthrough"
	"gw/edge/passthrough/gate"
)

// FuzzA2AParseRequest: the JSON-RPC framing reader never panics, accepts
// only what encoding/json reads as a request object with jsonrpc "2.0" and
// a string method, and returns the method as written.
func FuzzA2AParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`,
		`{"jsonrpc":"2.0","id":"a","method":"message/stream"}`,
		`{"jsonrpc":"2.0","method":"tasks/get","id":null}`,
		`{"jsonrpc":"2.0","method":"m\u0041"}`, `[{"jsonrpc":"2.0","method":"x"}]`, `{"jsonrpc":"1.0","method":"x"}`,
		`{"jsonrpc":"2.0","id":{},"method":"x"}`, `{`, ``, `{"method":"x","method":"y","jsonrpc":"2.0"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := a2a.ParseRequest(body)
		if err != nil {
			return
		}
		var m struct {
			JSONRPC string           `json:"jsonrpc"`
			Method  string           `json:"method"`
			ID      *json.RawMessage `json:"id"`
		}
		if jerr := json.Unmarshal(body, &m); jerr != nil {
			t.Fatalf("accepted %q that encoding/json refuses: %v", body, jerr)
		}
		if m.JSONRPC != "2.0" || m.Method != string(r.Method) {
			t.Fatalf("%q: got method %q; encoding/json reads jsonrpc %q method %q", body, r.Method, m.JSONRPC, m.Method)
		}
		out := a2a.AppendError(nil, r.ID, a2a.CodeInvalidRequest, "x")
		if !json.Valid(out) {
			t.Fatalf("error answer for id %q is not JSON: %s", r.ID, out)
		}
	})
}

// FuzzA2ARewriteCard: a rewritten card is valid JSON whose url is gw's and
// which never keeps the agent's own address in url or additionalInterfaces.
func FuzzA2ARewriteCard(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","url":"http://agent.internal/rpc","additionalInterfaces":[{"url":"http://agent.internal/rpc","transport":"GRPC"}]}`,
		`{"name":"a"}`, `{"url":1,"security":[],"securitySchemes":null,"supportsAuthenticatedExtendedCard":true}`, `[]`, `{`, `"x"`,
		`{"url":"a","url":"b"}`,
	} {
		f.Add([]byte(s))
	}
	const gw = "http://gw.example:8080/a2a/echo"
	f.Fuzz(func(t *testing.T, card []byte) {
		out, err := a2a.RewriteCard(nil, card, gw)
		if err != nil {
			return
		}
		var m struct {
			URL        string `json:"url"`
			Interfaces []struct {
				URL string `json:"url"`
			} `json:"additionalInterfaces"`
		}
		if jerr := json.Unmarshal(out, &m); jerr != nil {
			t.Fatalf("rewritten card is not JSON: %v\n%s", jerr, out)
		}
		if m.URL != gw {
			t.Fatalf("url %q in %s", m.URL, out)
		}
		for _, i := range m.Interfaces {
			if i.URL != gw {
				t.Fatalf("interface url %q in %s", i.URL, out)
			}
		}
	})
}

// FuzzPassthroughExtractText: the guardrail text of a JSON body holds
// every string value encoding/json decodes, and nothing panics.
func FuzzPassthroughExtractText(f *testing.F) {
	for _, s := range []string{`{"a":"x","b":["y",{"c":"z\n\u00e9"}]}`, `[1,2,"three"]`, `plain text`, "bin\x00ary", `{"a":`, `"s"`} {
		f.Add([]byte(s), []byte("application/json"))
		f.Add([]byte(s), []byte(""))
		f.Add([]byte(s), []byte("text/plain; charset=utf-8"))
	}
	f.Fuzz(func(t *testing.T, body, ct []byte) {
		out, ok := passthrough.ExtractText(nil, body, ct)
		if !ok {
			return
		}
		var v any
		if json.Unmarshal(body, &v) != nil || bytes.HasPrefix(ct, []byte("text/")) {
			return
		}
		var walk func(v any)
		walk = func(v any) {
			switch x := v.(type) {
			case string:
				if !bytes.Contains(out, []byte(x)) {
					t.Fatalf("text of %q lacks %q: %q", body, x, out)
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			case map[string]any:
				for _, e := range x {
					walk(e)
				}
			}
		}
		walk(v)
	})
}

// FuzzGateGranted: a single-'*' glob matches exactly what prefix/suffix
// matching says, and an exact entry only itself.
func FuzzGateGranted(f *testing.F) {
	f.Add("oa-*", "oa-files")
	f.Add("*", "")
	f.Add("a*a", "a")
	f.Add("exact", "exact")
	f.Fuzz(func(t *testing.T, glob, name string) {
		got := gate.Granted([]string{glob}, name)
		i := bytes.IndexByte([]byte(glob), '*')
		var want bool
		if i < 0 {
			want = glob == name
		} else {
			pre, suf := glob[:i], glob[i+1:]
			want = len(name) >= len(pre)+len(suf) && name[:len(pre)] == pre && name[len(name)-len(suf):] == suf
		}
		if got != want {
			t.Fatalf("Granted(%q, %q) = %v; want %v", glob, name, got, want)
		}
	})
}
