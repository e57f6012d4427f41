package edge

import (
	"encoding/json"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestSurface501Type: a 501 has the same error.type on every model
// surface, invalid_request_error (Messages used to say api_error), each in
// its own envelope.
func TestSurface501Type(t *testing.T) {
	for name, s := range map[string]*surface{"chat": surfChat, "messages": surfMessages, "responses": surfResponses} {
		var ctx fasthttp.RequestCtx
		s.writeError(&ctx, fasthttp.StatusNotImplemented, "invalid_request_error", "not_implemented", "not served by this build")
		var e struct {
			Type  string
			Error struct{ Type, Code string }
		}
		if err := json.Unmarshal(ctx.Response.Body(), &e); err != nil {
			t.Fatalf("%s: %v %s", name, err, ctx.Response.Body())
		}
		if ctx.Response.StatusCode() != 501 || e.Error.Type != "invalid_request_error" {
			t.Fatalf("%s: %d %s", name, ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
}
