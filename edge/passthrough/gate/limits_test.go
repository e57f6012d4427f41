package gate

import (
	"testing"

	"github.com/valyala/fasthttp"

	"gw/admin/resources"
	"gw/limiter"
)

func TestLimits(t *testing.T) {
	l := limiter.New(limiter.Config{})
	defer l.Close()
	pols := []*resources.RateLimitPolicy{
		{ID: "p-team", Name: "team", Scope: resources.RateScopeTeam, WindowUnit: "minute", MaxRequests: 2, Enabled: true},
		{ID: "p-model", Name: "model", Scope: resources.RateScopeModel, WindowUnit: "minute", MaxRequests: 1, Enabled: true}, // no model: never applies
		{ID: "p-tok", Name: "tok", Scope: resources.RateScopeAPIKey, WindowUnit: "minute", MaxTokens: 1, Enabled: true},      // no tokens: never charged
	}
	for _, tc := range []struct {
		name   string
		key    *resources.APIKey
		admits int
		limHdr string
		conc   bool // a second call while the first holds its slot is refused
	}{
		{"key rpm", &resources.APIKey{ID: "k1", RateLimit: &resources.RateLimit{RPM: 3}}, 3, "3", false},
		{"team policy", &resources.APIKey{ID: "k2", TeamID: "blue"}, 2, "2", false},
		{"none", &resources.APIKey{ID: "k3"}, 5, "", false},
		{"concurrency", &resources.APIKey{ID: "k4", RateLimit: &resources.RateLimit{Concurrency: 1}}, 1, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var held *Limits
			for i := 0; i < tc.admits; i++ {
				var ctx fasthttp.RequestCtx
				a := new(Limits)
				if !a.Admit(&ctx, l, pols, tc.key, nil) {
					t.Fatalf("call %d refused: %s", i, ctx.Response.Body())
				}
				a.SetHeaders(&ctx.Response.Header)
				if got := string(ctx.Response.Header.Peek("X-Ratelimit-Limit-Requests")); got != tc.limHdr {
					t.Fatalf("call %d: limit header %q; want %q", i, got, tc.limHdr)
				}
				if tc.conc {
					held = a // keeps its slot
					continue
				}
				a.Release(l)
			}
			var ctx fasthttp.RequestCtx
			var a Limits
			ok := a.Admit(&ctx, l, pols, tc.key, nil)
			if tc.limHdr == "" && !tc.conc {
				if !ok {
					t.Fatalf("refused without a limit: %s", ctx.Response.Body())
				}
				a.Release(l)
				return
			}
			if ok || ctx.Response.StatusCode() != 429 || len(ctx.Response.Header.Peek("Retry-After")) == 0 {
				t.Fatalf("over the limit: admitted %v, status %d: %s", ok, ctx.Response.StatusCode(), ctx.Response.Body())
			}
			if held != nil {
				held.Release(l)
			}
			if tc.conc { // the slot is free again
				var b Limits
				if !b.Admit(&ctx, l, pols, tc.key, nil) {
					t.Fatal("refused after the slot was released")
				}
				b.Release(l)
			}
		})
	}
}
