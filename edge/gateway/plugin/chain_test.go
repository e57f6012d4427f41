package plugin

import (
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	admingw "gw/admin/gateway"
	"gw/edge/gateway/vars"
)

// rec is a test plugin that records the phases it ran in the request's
// Buf2 and answers 418 in access when configured with {"deny":true}.
type rec struct {
	Base
	name string
	deny bool
}

func (r *rec) Phases() Phase { return Rewrite | Access | Log }
func (r *rec) Rewrite(c *Ctx) bool {
	c.Buf2 = append(c.Buf2, r.name+".rw "...)
	return true
}
func (r *rec) Access(c *Ctx) bool {
	c.Buf2 = append(c.Buf2, r.name+".ac "...)
	if r.deny {
		c.Reply(418, nil)
		return false
	}
	return true
}
func (r *rec) Log(c *Ctx) { c.Buf2 = append(c.Buf2, r.name+".log "...) }

func init() {
	for _, d := range []struct {
		name string
		prio int
		auth bool
	}{{"t-high", 3000, false}, {"t-low", 10, false}, {"t-auth", 2500, true}} {
		d := d
		Register(&Def{Name: d.name, Priority: d.prio, Auth: d.auth, New: func(raw json.RawMessage, env *Env, owner string) (Plugin, error) {
			var c struct {
				Deny bool `json:"deny"`
				Bad  bool `json:"bad"`
			}
			_ = json.Unmarshal(raw, &c)
			if c.Bad {
				return nil, errors.New("bad configuration")
			}
			return &rec{name: d.name, deny: c.Deny}, nil
		}})
	}
}

func newCtx(uri string) *Ctx {
	r := &fasthttp.RequestCtx{}
	r.Request.SetRequestURI(uri)
	r.SetRemoteAddr(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1})
	c := &Ctx{}
	c.Reset(r, &vars.Context{RouteID: "1"})
	return c
}

func run(ch *Chain, c *Ctx) string {
	if ch.RunRewrite(c) && ch.RunAccess(c) {
		c.Buf2 = append(c.Buf2, "upstream "...)
	}
	ch.RunLog(c)
	return strings.TrimSpace(string(c.Buf2))
}

func TestCompile(t *testing.T) {
	env := &Env{Snap: &admingw.Snapshot{}}
	f := func(plugins, uri, want string) {
		t.Helper()
		var ps admingw.Plugins
		if err := json.Unmarshal([]byte(plugins), &ps); err != nil {
			t.Fatal(err)
		}
		ch, err := Compile(ps, env, "route/1", false)
		if err != nil {
			if want != "error: "+err.Error() {
				t.Fatalf("%s: %v; want %s", plugins, err, want)
			}
			return
		}
		if got := run(ch, newCtx(uri)); got != want {
			t.Fatalf("%s: got %q; want %q", plugins, got, want)
		}
	}
	// Priority order, higher first; each phase completes before the next.
	f(`{"t-low":{},"t-high":{}}`, "/", "t-high.rw t-low.rw t-high.ac t-low.ac upstream t-high.log t-low.log")
	// _meta.priority overrides the plugin's.
	f(`{"t-low":{"_meta":{"priority":5000}},"t-high":{}}`, "/", "t-low.rw t-high.rw t-low.ac t-high.ac upstream t-low.log t-high.log")
	// _meta.disable leaves the plugin out.
	f(`{"t-low":{"_meta":{"disable":true}},"t-high":{}}`, "/", "t-high.rw t-high.ac upstream t-high.log")
	// An access answer skips the rest and the upstream; the log still runs.
	f(`{"t-low":{},"t-high":{"deny":true}}`, "/", "t-high.rw t-low.rw t-high.ac t-high.log t-low.log")
	// _meta.filter runs the plugin only on matching requests.
	f(`{"t-low":{"_meta":{"filter":[["arg_x","==","1"]]}},"t-high":{}}`, "/?x=1", "t-high.rw t-low.rw t-high.ac t-low.ac upstream t-high.log t-low.log")
	f(`{"t-low":{"_meta":{"filter":[["arg_x","==","1"]]}},"t-high":{}}`, "/?x=2", "t-high.rw t-high.ac upstream t-high.log")
	// Never served without a plugin or option that cannot run.
	f(`{"no-such":{}}`, "/", "error: plugin no-such is not built in the data plane")
	f(`{"t-low":{"bad":true}}`, "/", "error: plugin t-low: bad configuration")
	f(`{"t-low":{"_meta":{"pre_function":"return"}}}`, "/", "error: plugin t-low: _meta.pre_function (Lua) is not built in this build")
	f(`{"t-low":{"_meta":{"error_response":"x"}}}`, "/", "error: plugin t-low: _meta.error_response is not built in this build")
	f(`{"no-such":{"_meta":{"disable":true}}}`, "/", "upstream")
}

func TestMergeConsumer(t *testing.T) {
	env := &Env{Snap: &admingw.Snapshot{}}
	route, err := Compile(admingw.Plugins{"t-auth": json.RawMessage(`{}`), "t-low": json.RawMessage(`{}`)}, env, "route/1", false)
	if err != nil {
		t.Fatal(err)
	}
	// A consumer's auth entry is a credential, not a plugin to run.
	con, err := Compile(admingw.Plugins{"t-auth": json.RawMessage(`{}`), "t-low": json.RawMessage(`{"deny":true}`), "t-high": json.RawMessage(`{}`)}, env, "consumer/jack", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(con.List) != 2 || con.Auth {
		t.Fatalf("consumer chain %+v", con.List)
	}
	m := Merge(route, con)
	var names []string
	for _, in := range m.List {
		names = append(names, in.Name)
	}
	if got := strings.Join(names, ","); got != "t-high,t-auth,t-low" {
		t.Fatalf("merged %s", got)
	}
	// The consumer's t-low (deny) replaced the route's.
	if got := run(m, newCtx("/")); !strings.Contains(got, "t-low.ac t-high.log") || strings.Contains(got, "upstream") {
		t.Fatalf("merged run %q", got)
	}
}

func TestCheckConfig(t *testing.T) {
	for _, tc := range []struct {
		name, conf string
		consumer   bool
		err        string
	}{
		{"t-low", `{}`, false, ""},
		{"no-such", `{}`, false, "plugin no-such is not built in this build"},
		{"t-low", `{"_meta":{"pre_function":"return"}}`, false, "_meta.pre_function (Lua) is not built in this build"},
		{"t-low", `{"_meta":{"filter":[["arg_x","~~","("]]}}`, false, "_meta.filter"},
		{"t-auth", `{"_meta":{"error_response":"x"}}`, true, ""}, // a credential
		{"t-auth", `{"_meta":{"error_response":"x"}}`, false, "_meta.error_response"},
	} {
		err := CheckConfig(tc.name, json.RawMessage(tc.conf), tc.consumer)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s %s: got %v; want %q", tc.name, tc.conf, err, tc.err)
		}
	}
}
