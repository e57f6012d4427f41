package edge

import (
	"github.com/valyala/fasthttp"
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
	b = appendJSONString(b, typ)
	b = append(b, `,"code":`...)
	if code == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, code)
	}
	b = append(b, `,"message":`...)
	b = appendJSONString(b, message)
	b = append(b, "}}\n"...)
	ctx.SetBody(b)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string literal.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
