package headers

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

var ownedOpenAI = []string{"authorization", "content-type", "content-length", "host", "accept-encoding"}

func compile(t *testing.T, forward []string, defaults ...Template) *Rules {
	t.Helper()
	r, err := Compile(&Config{ForwardClientHeaders: forward, DefaultHeaders: defaults}, ownedOpenAI)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return r
}

// neverRelayed is the spec's list, written out.
var neverRelayed = []string{"host", "connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
	"proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "x-gw-routing-key", "x-gw-anything",
	"content-type", "content-length", "accept", "accept-encoding", "content-encoding", "expect", "set-cookie",
	"anthropic-version", "x-stainless-lang", "x-stainless-retry-count"}

func TestForward(t *testing.T) {
	f := func(forward []string, name string, want bool) {
		t.Helper()
		r := compile(t, forward)
		if got := r.Forward([]byte(name)); got != want {
			t.Fatalf("forward %q, header %q: got %v; want %v", forward, name, got, want)
		}
	}
	// Default: nothing is forwarded.
	f(nil, "x-request-id", false)
	// Exact names and one glob, case-insensitive both ways.
	f([]string{"x-request-id"}, "X-Request-Id", true)
	f([]string{"X-Request-ID"}, "x-request-id", true)
	f([]string{"x-request-id"}, "x-request-idx", false)
	f([]string{"x-trace-*"}, "X-Trace-Span", true)
	f([]string{"x-trace-*"}, "x-trace-", true)
	f([]string{"x-trace-*"}, "x-tracex", false)
	f([]string{"*-id"}, "x-session-id", true)
	f([]string{"x-*-id"}, "x-session-id", true)
	f([]string{"x-*-id"}, "x-id", false) // prefix and suffix must not overlap
	f([]string{"*"}, "user-agent", true)

	// The never-relayed list wins over globs and exact names alike.
	for _, h := range neverRelayed {
		f([]string{"*"}, h, false)
		f([]string{h}, h, false)
		f([]string{h}, strings.ToUpper(h), false)
	}
	f([]string{"x-gw-*"}, "x-gw-routing-key", false)
	f([]string{"x-stainless-*"}, "x-stainless-os", false)

	// Credential slots and trace context: exact names only.
	for _, h := range []string{"authorization", "x-api-key", "api-key", "cookie", "traceparent", "tracestate"} {
		f([]string{"*"}, h, false)
		f([]string{h[:len(h)-2] + "*"}, h, false)
		f([]string{h}, h, true)
		f([]string{h}, strings.ToUpper(h), true)
	}
	// proxy-authorization is hop-by-hop: never, even named.
	f([]string{"proxy-authorization"}, "proxy-authorization", false)
}

func TestCompileErrors(t *testing.T) {
	for _, fw := range [][]string{{"x-*-*"}, {""}} {
		if _, err := Compile(&Config{ForwardClientHeaders: fw}, nil); err != ErrBadPattern {
			t.Fatalf("%q: got %v; want ErrBadPattern", fw, err)
		}
	}
	tmpl := Template{Name: "x", Parts: []Part{{Var: 200}}}
	if _, err := Compile(&Config{DefaultHeaders: []Template{tmpl}}, nil); err != ErrBadVar {
		t.Fatalf("got %v; want ErrBadVar", err)
	}
}

func lit(name, v string) Template {
	return Template{Name: name, Parts: []Part{{Literal: v}}}
}

func withVar(name, prefix string, v Var) Template {
	return Template{Name: name, Parts: []Part{{Literal: prefix}, {Var: v}}}
}

func TestApply(t *testing.T) {
	type kv struct{ k, v string }
	f := func(name string, forward []string, defaults []Template, client []kv, vars Vars,
		noRelay Slots, want map[string][]string) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Helper()
			r := compile(t, forward, defaults...)
			var ch fasthttp.RequestHeader
			for _, h := range client {
				ch.Add(h.k, h.v)
			}
			var dst fasthttp.RequestHeader
			// What the adapter sets before Apply.
			dst.Set("Authorization", "Bearer sk-upstream")
			dst.SetContentType("application/json")
			r.Apply(&dst, &ch, &vars, noRelay, nil)
			for k, wantVals := range want {
				var got []string
				for _, v := range dst.PeekAll(k) {
					got = append(got, string(v))
				}
				if strings.Join(got, "|") != strings.Join(wantVals, "|") {
					t.Errorf("%s = %q; want %q", k, got, wantVals)
				}
			}
		})
	}
	var team Vars
	team[VarAPIKeyTeamID] = "t1"

	f("default header added", nil, []Template{lit("x-env", "prod")}, nil, Vars{}, 0,
		map[string][]string{"X-Env": {"prod"}})
	f("template variable expanded", nil, []Template{withVar("x-team", "team-", VarAPIKeyTeamID)},
		nil, team, 0, map[string][]string{"X-Team": {"team-t1"}})
	f("empty variable drops the header", nil, []Template{withVar("x-team", "team-", VarAPIKeyTeamID)},
		nil, Vars{}, 0, map[string][]string{"X-Team": nil})
	f("empty variable drops the default, forwarded value stays", []string{"x-team"},
		[]Template{withVar("x-team", "team-", VarAPIKeyTeamID)},
		[]kv{{"X-Team", "from-client"}}, Vars{}, 0, map[string][]string{"X-Team": {"from-client"}})
	f("CR in variable drops the header", nil, []Template{withVar("x-user", "", VarAPIKeyUserName)},
		nil, func() (v Vars) { v[VarAPIKeyUserName] = "a\r\nX-Evil: 1"; return }(), 0,
		map[string][]string{"X-User": nil, "X-Evil": nil})
	f("default wins over forwarded outside credential slots", []string{"x-env"},
		[]Template{lit("x-env", "prod")}, []kv{{"X-Env", "dev"}, {"X-Env", "dev2"}}, Vars{}, 0,
		map[string][]string{"X-Env": {"prod"}})
	f("default cannot override authorization", nil, []Template{lit("authorization", "Bearer evil")},
		nil, Vars{}, 0, map[string][]string{"Authorization": {"Bearer sk-upstream"}})
	f("default cannot override content-type", nil, []Template{lit("content-type", "text/plain")},
		nil, Vars{}, 0, map[string][]string{"Content-Type": {"application/json"}})
	f("host, hop-by-hop and x-gw defaults dropped", nil,
		[]Template{lit("host", "evil"), lit("connection", "close"), lit("x-gw-route", "x"), lit("te", "trailers")},
		nil, Vars{}, 0, map[string][]string{"X-Gw-Route": nil, "Te": nil})
	f("forwarded credential slot wins over its default", []string{"x-api-key"},
		[]Template{lit("x-api-key", "default-key")}, []kv{{"X-Api-Key", "client-key"}}, Vars{}, 0,
		map[string][]string{"X-Api-Key": {"client-key"}})
	f("credential default applies when the client sends none", []string{"x-api-key"},
		[]Template{lit("x-api-key", "default-key")}, nil, Vars{}, 0,
		map[string][]string{"X-Api-Key": {"default-key"}})
	f("exact authorization relays the client credential (bring your own key)", []string{"authorization"}, nil,
		[]kv{{"Authorization", "Bearer sk-byok"}, {"X-Api-Key", "sk-gw-caller"}}, Vars{}, SlotXAPIKey,
		map[string][]string{"Authorization": {"Bearer sk-byok"}, "X-Api-Key": nil})
	f("the caller's gw credential is never relayed", []string{"authorization"}, nil,
		[]kv{{"Authorization", "Bearer sk-gw-caller"}}, Vars{}, SlotAuthorization,
		map[string][]string{"Authorization": {"Bearer sk-upstream"}})
	f("glob does not relay credential slots or trace context", []string{"*"}, nil,
		[]kv{{"Authorization", "Bearer c"}, {"Cookie", "a=b"}, {"Traceparent", "00-x"}, {"X-Other", "1"}}, Vars{}, 0,
		map[string][]string{"Authorization": {"Bearer sk-upstream"}, "Cookie": nil, "Traceparent": nil, "X-Other": {"1"}})
	f("exact trace context relayed", []string{"traceparent", "tracestate"}, nil,
		[]kv{{"Traceparent", "00-abc-01"}, {"Tracestate", "k=v"}}, Vars{}, 0,
		map[string][]string{"Traceparent": {"00-abc-01"}, "Tracestate": {"k=v"}})
	f("never-relayed client headers stay out", []string{"*"}, nil,
		[]kv{{"X-Gw-Routing-Key", "k"}, {"X-Stainless-Lang", "py"}, {"Accept", "text/event-stream"}, {"Anthropic-Version", "1"},
			{"Content-Type", "text/plain"}, {"Expect", "100-continue"}}, Vars{}, 0,
		map[string][]string{"X-Gw-Routing-Key": nil, "X-Stainless-Lang": nil, "Accept": nil, "Anthropic-Version": nil,
			"Content-Type": {"application/json"}, "Expect": nil})
	f("repeated forwarded header keeps every value", []string{"x-tag"}, nil,
		[]kv{{"X-Tag", "a"}, {"X-Tag", "b"}}, Vars{}, 0, map[string][]string{"X-Tag": {"a", "b"}})
}

func TestSlotOf(t *testing.T) {
	for h, want := range map[string]Slots{"authorization": SlotAuthorization, "x-api-key": SlotXAPIKey,
		"api-key": SlotAPIKey, "cookie": SlotCookie, "proxy-authorization": SlotProxyAuthorization, "x-other": 0} {
		if got := SlotOf(h); got != want {
			t.Fatalf("%s: got %v; want %v", h, got, want)
		}
	}
}

// TestNeverRelayed checks NeverRelayed (which the loader uses too) against
// the list above.
func TestNeverRelayed(t *testing.T) {
	for _, h := range neverRelayed {
		if !NeverRelayed(h) {
			t.Fatalf("%s: NeverRelayed false", h)
		}
	}
	for _, h := range []string{"x-request-id", "authorization", "traceparent", "user-agent", "x-gw", "x-stainless"} {
		if NeverRelayed(h) {
			t.Fatalf("%s: NeverRelayed true", h)
		}
	}
}
