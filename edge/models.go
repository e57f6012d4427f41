package edge

import (
	"strconv"

	"github.com/valyala/fasthttp"

	"gw/admin/snapshot"
)

// serveModels answers GET /v1/models with the concrete aliases the caller
// may use, in the OpenAI list shape. Wildcard grants are already expanded
// against the snapshot's aliases, so patterns themselves never appear.
func serveModels(ctx *fasthttp.RequestCtx, snap *snapshot.Snapshot, c *snapshot.Caller) {
	created := strconv.AppendInt(nil, snap.CompiledAt.Unix(), 10)
	b := make([]byte, 0, 64+len(snap.PlanList)*80)
	b = append(b, `{"object":"list","data":[`...)
	n := 0
	for _, p := range snap.PlanList {
		if !c.Allowed(p) || !p.Servable {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, `{"id":`...)
		b = append(b, p.AliasJSON...)
		b = append(b, `,"object":"model","created":`...)
		b = append(b, created...)
		b = append(b, `,"owned_by":"gw"}`...)
	}
	b = append(b, "]}\n"...)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}

// serveModel answers GET /v1/models/{id} for one visible alias.
func serveModel(ctx *fasthttp.RequestCtx, snap *snapshot.Snapshot, c *snapshot.Caller, alias string) {
	p := snap.Plans[alias]
	if p == nil || !c.Allowed(p) || !p.Servable {
		modelNotFound(ctx, WriteError, alias)
		return
	}
	b := make([]byte, 0, 96)
	b = append(b, `{"id":`...)
	b = append(b, p.AliasJSON...)
	b = append(b, `,"object":"model","created":`...)
	b = strconv.AppendInt(b, snap.CompiledAt.Unix(), 10)
	b = append(b, `,"owned_by":"gw"}`+"\n"...)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}

// modelNotFound is the answer for an unknown alias and for one the key may
// not use alike (as OpenAI does), so a caller cannot probe which aliases exist.
func modelNotFound(ctx *fasthttp.RequestCtx, writeError errorWriter, alias string) {
	writeError(ctx, fasthttp.StatusNotFound, "invalid_request_error", "model_not_found",
		"The model `"+truncate(alias, 256)+"` does not exist or you do not have access to it.")
}
