package edge

import (
	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/admin/snapshot"
)

// endpointAnswer converts a 2xx endpoint answer the upstream gave in its
// own format (adapters.EndpointAnswerer: Bedrock, Vertex) to the caller's
// endpoint format; any other answer is returned as it is. On failure it
// answers 502 and returns false. The result lives in a pooled buffer held
// by c until the call is released.
func (p *Proxy) endpointAnswer(ctx *fasthttp.RequestCtx, c *call, resp *fasthttp.Response, up *snapshot.Upstream, body []byte) ([]byte, bool) {
	if c.surf.endpoint == adapters.EndpointNone {
		return body, true
	}
	ea, ok := up.Adapter.(adapters.EndpointAnswerer)
	if !ok {
		return body, true
	}
	out, err := ea.AnswerEndpoint(c.answerBuf[:0], c.surf.endpoint, c.origBody, resp)
	if err != nil {
		c.surf.writeError(ctx, fasthttp.StatusBadGateway, "server_error", "bad_upstream_response", "cannot convert the upstream answer: "+err.Error())
		c.errClass = "conversion"
		return nil, false
	}
	c.answerBuf = out
	return out, true
}
