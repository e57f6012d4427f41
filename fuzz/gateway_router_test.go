package fuzz

import (
	"net"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/edge/gateway/router"
	"gw/edge/gateway/vars"
)

var varsSeeds = []string{
	`[["arg_a","==","x"]]`,
	`["OR",["arg_a","in",["1","2"]],["AND",["http_x_v",">",2],["cookie_c","~~","^a+$"]]]`,
	`[["remote_addr","ipmatch",["10.0.0.0/8","::1"]],["uri","!","~*","^/API"]]`,
	`["!AND",["arg_z","==",1]]`,
	`[["http_x_tags","has","blue"]]`,
	`[[[[[["arg_a","==","1"]]]]]]`,
	`[["arg_a"]]`, `[1]`, `{}`, `[["arg_a","~~","("]]`,
}

// FuzzGatewayVars: any vars expression either fails to compile or
// evaluates against any request without panicking.
func FuzzGatewayVars(f *testing.F) {
	for _, s := range varsSeeds {
		f.Add(s, "/a?x=1&a=2", "X-V", "3")
	}
	f.Fuzz(func(t *testing.T, expr, uri, hk, hv string) {
		x, err := router.CompileExpr([]byte(expr))
		if err != nil {
			return
		}
		ctx := &fasthttp.RequestCtx{}
		ctx.Request.SetRequestURI(uri)
		if hk != "" {
			ctx.Request.Header.Set(hk, hv)
		}
		ctx.SetRemoteAddr(&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 1})
		x.Eval(ctx, nil, nil)
	})
}

// FuzzGatewayTemplate: any template either fails to compile or expands
// without panicking.
func FuzzGatewayTemplate(f *testing.F) {
	for _, s := range []string{"/v2$uri", "${arg_v ?? 1}/x", `\$uri`, "$", "${", "${}", "$http_x_a$arg_b", "${uri??}"} {
		f.Add(s, "/p?v=9")
	}
	f.Fuzz(func(t *testing.T, tmpl, uri string) {
		tp, err := vars.CompileTemplate(tmpl)
		if err != nil {
			return
		}
		ctx := &fasthttp.RequestCtx{}
		ctx.Request.SetRequestURI(uri)
		tp.Append(nil, ctx, &vars.Context{RouteID: "r"})
	})
}
