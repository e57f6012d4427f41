package edge

import (
	"github.com/valyala/fasthttp"

	"gw/sse/rawjson"
)

// WriteError writes the caller-facing error envelope
// {"error":{"type","code","message"}} with status. message must not hold
// credentials or user content.
func WriteError(ctx *fasthttp.RequestCtx, status int, typ, code, message string) {
	ctx.Response.Reset()
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	b := make([]byte, 0, 64+len(message))
	b = append(b, `{"error":{"type":`...)
	b = rawjson.AppendQuote(b, typ)
	b = append(b, `,"code":`...)
	if code == "" {
		b = append(b, "null"...)
	} else {
		b = rawjson.AppendQuote(b, code)
	}
	b = append(b, `,"message":`...)
	b = rawjson.AppendQuote(b, message)
	b = append(b, "}}\n"...)
	ctx.SetBody(b)
}
