package plugin

import (
	"encoding/json"
	"testing"

	"github.com/valyala/fasthttp"

	admingw "gw/admin/gateway"
	"gw/edge/gateway/vars"
)

func TestCredentialIndex(t *testing.T) {
	jack, anon := &admingw.Consumer{Username: "jack"}, &admingw.Consumer{Username: "anon"}
	env := &Env{Snap: &admingw.Snapshot{
		Consumers: map[string]*admingw.Consumer{"jack": jack, "anon": anon},
		Auth:      map[string]map[string]*admingw.Consumer{"x-auth": {"k1": jack, "k2": jack}},
		AuthConf:  map[string]map[string]json.RawMessage{"x-auth": {"k1": json.RawMessage(`{"n":1}`), "k2": json.RawMessage(`{"n":2}`)}},
	}}
	calls := 0
	mk := func(id string, con *admingw.Consumer, conf json.RawMessage) (string, bool) {
		calls++
		return id + "=" + con.Username + string(conf), id != "k2"
	}
	for range 2 {
		m, err := CredentialIndex(env, "x-auth", mk)
		if err != nil || len(m) != 1 || m["k1"] != `k1=jack{"n":1}` {
			t.Fatalf("got %v %v", m, err)
		}
	}
	if calls != 2 {
		t.Fatalf("mk ran %d times; want once per credential per snapshot", calls)
	}
	var a AuthBase
	if err := a.SetAnonymous(env, "nobody"); err == nil {
		t.Fatal("an unknown anonymous consumer was accepted")
	}
	c := &Ctx{}
	c.Reset(&fasthttp.RequestCtx{}, &vars.Context{})
	if a.Fail(c, ErrorBody("no")) || c.R.Response.StatusCode() != 401 {
		t.Fatal("Fail without an anonymous consumer let the request through")
	}
	if err := a.SetAnonymous(env, "anon"); err != nil {
		t.Fatal(err)
	}
	c.Reset(&fasthttp.RequestCtx{}, &vars.Context{})
	if !a.Fail(c, ErrorBody("no")) || c.Vars.ConsumerName != "anon" {
		t.Fatal("Fail with an anonymous consumer did not let it through as anon")
	}
}
