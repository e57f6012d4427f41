package passthrough

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters/bedrock"
	"gw/adapters/upstream"
	"gw/adapters/vertex"
	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/guard"
	"gw/edge/passthrough/gate"
)

// credential is what an inject-mode route puts on a request from its
// provider key: a fixed header (name, value), a SigV4 signature (bedrock:
// the key's compiled adapter signs with its credentials and region) or an
// OAuth access token (vertex: the key's token cache, refreshed before
// expiry, shared with its model calls).
type credential struct {
	name, value string
	signer      *bedrock.Adapter
	tokens      *vertex.Tokens
}

func (c credential) ok() bool { return c.name != "" || c.signer != nil || c.tokens != nil }

// credentialOf is the provider key's credential as its adapter family
// sends it (the header the model adapters send, or the compiled adapter of
// the signed families from up); ok is false when the key's adapter was not
// compiled.
func credentialOf(pk *resources.ProviderKey, up *snapshot.Upstream) (credential, bool) {
	switch pk.Adapter {
	case resources.AdapterOpenAI, "":
		return credential{name: "Authorization", value: "Bearer " + pk.APIKey.Reveal()}, true
	case resources.AdapterAnthropic:
		return credential{name: "x-api-key", value: pk.APIKey.Reveal()}, true
	case resources.AdapterAzureOpenAI:
		return credential{name: "api-key", value: pk.APIKey.Reveal()}, true
	}
	if up == nil {
		return credential{}, false
	}
	switch a := up.Adapter.(type) {
	case *bedrock.Adapter:
		return credential{signer: a}, true
	case *vertex.Adapter:
		return credential{tokens: a.Tokens()}, true
	}
	return credential{}, false
}

// methodOf returns the constant spelling of method m, "" when it is not a
// passthrough method.
func methodOf(m []byte) string {
	for _, s := range resources.PassthroughMethods {
		if string(m) == s {
			return s
		}
	}
	return ""
}

// forwardHeader decides whether client header k (lowercased in lk) goes
// upstream. Hop-by-hop and framing headers never do. With the route's
// forward_client_headers, exactly the listed names (one '*' at most) do;
// otherwise, in inject mode, all but the provider key's strip_headers; in
// forward mode, all. authorization and x-api-key, the headers of gw's own
// caller credential, never leave (docs/CONFIG.md "passthrough_routes").
func forwardHeader(r *resources.PassthroughRoute, lk []byte) bool {
	if gate.HopByHop(lk) || (len(lk) > 5 && string(lk[:5]) == "x-gw-") ||
		string(lk) == "authorization" || string(lk) == "x-api-key" {
		return false
	}
	if r.Inject() && r.ProviderKey.Adapter == resources.AdapterBedrock && len(lk) > 6 && string(lk[:6]) == "x-amz-" {
		return false // AWS requires every x-amz-* header signed; gw signs only its own
	}
	if r.ForwardClientHeadersSet {
		return gate.Granted(r.ForwardClientHeaders, string(lk))
	}
	if r.Inject() {
		for _, s := range r.ProviderKey.StripHeaders {
			if string(lk) == s {
				return false
			}
		}
	}
	return true
}

// buildRequest fills req: method, upstream URL (strip_prefix applied, the
// query kept), relayed headers, credential and body.
func (h *Handler) buildRequest(ctx *fasthttp.RequestCtx, c *call, req *fasthttp.Request, cred credential) {
	r := c.route
	req.Header.SetMethod(c.method)
	u := append(c.url[:0], r.Upstream...)
	if n := len(u); n > 0 && u[n-1] == '/' {
		u = u[:n-1]
	}
	path := ctx.Path()
	if r.StripPrefix && r.Path != "/" {
		path = path[len(r.Path):]
	}
	u = appendPath(u, path)
	if q := ctx.URI().QueryString(); len(q) > 0 {
		u = append(append(u, '?'), q...)
	}
	c.url = u
	req.SetRequestURIBytes(u)

	for k, v := range ctx.Request.Header.All() {
		c.lk = lowerInto(c.lk[:0], k)
		if forwardHeader(r, c.lk) {
			req.Header.AddBytesKV(k, v)
		}
	}
	if cred.name != "" {
		req.Header.Set(cred.name, cred.value)
	}

	switch rs := ctx.RequestBodyStream(); {
	case c.bodyRead:
		req.SetBodyRaw(c.body)
		c.reqN = int64(len(c.body))
	case rs != nil && ctx.Request.Header.ContentLength() != 0:
		c.lr = limitReader{r: rs, n: h.maxBody(), read: &c.reqN}
		size := ctx.Request.Header.ContentLength()
		if size < 0 {
			size = -1 // chunked
		}
		req.SetBodyStream(&c.lr, size)
	default:
		b := ctx.Request.Body()
		req.SetBodyRaw(b)
		c.reqN = int64(len(b))
	}
}

// appendPath appends a decoded path to a URL, escaping what a path cannot
// hold literally.
func appendPath(dst, p []byte) []byte {
	const hex = "0123456789ABCDEF"
	for _, b := range p {
		if unreservedPath(b) {
			dst = append(dst, b)
			continue
		}
		dst = append(dst, '%', hex[b>>4], hex[b&15])
	}
	return dst
}

func unreservedPath(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	switch b {
	case '-', '.', '_', '~', '/', '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=', ':', '@':
		return true
	}
	return false
}

func lowerInto(dst, k []byte) []byte {
	for _, b := range k {
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		dst = append(dst, b)
	}
	return dst
}

// readWhole reads the request body into c.body for a guardrail (a streamed
// body is consumed here and forwarded from memory). 413 over the limit.
func (h *Handler) readWhole(ctx *fasthttp.RequestCtx, c *call) bool {
	rs := ctx.RequestBodyStream()
	if rs == nil || ctx.Request.Header.ContentLength() == 0 {
		c.body = append(c.body[:0], ctx.Request.Body()...)
		c.bodyRead = true
		return true
	}
	if cl := ctx.Request.Header.ContentLength(); cl > 0 && int64(cl) > h.maxBody() {
		tooLarge(ctx, c)
		return false
	}
	var n int64
	lr := limitReader{r: rs, n: h.maxBody(), read: &n}
	b, err := readAll(c.body[:0], &lr)
	c.body = b
	switch {
	case err == errBodyTooLarge:
		tooLarge(ctx, c)
		return false
	case err != nil:
		gate.WriteError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "bad_request", "cannot read the request body")
		ctx.SetConnectionClose()
		c.class = "bad_request"
		return false
	}
	c.bodyRead = true
	return true
}

func tooLarge(ctx *fasthttp.RequestCtx, c *call) {
	gate.WriteError(ctx, fasthttp.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", errBodyTooLarge.Error())
	ctx.SetConnectionClose()
	c.class = "request_too_large"
}

// readAll appends r's bytes to dst until EOF.
func readAll(dst []byte, r io.Reader) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// Caller-facing texts of guardrail rejections (never matched values).
const (
	msgBlockedInput  = "The request was blocked by guardrail policy"
	msgBlockedOutput = "The response was blocked by guardrail policy"
	msgUnavailable   = "A guardrail could not evaluate the content and fails closed"
)

// inputPolicy: the guardrails attached to the route, the caller key and
// its team judge the request's extracted text as one piece before it goes
// upstream. The text cannot be rewritten in place: a mask is recorded as
// mask_unsupported and the request passes.
func (h *Handler) inputPolicy(ctx *fasthttp.RequestCtx, c *call) bool {
	rg := c.snap.ScopeGuard(resources.GuardrailScope{Type: resources.GuardrailScopePassthroughRoute, Name: c.route.Name})
	kg, tg := c.caller.Guard, c.caller.TeamGuard
	if rg == nil && kg == nil && tg == nil {
		return true // Fast path - nothing attached.
	}
	if !guard.Merge(&c.e.Chain, guard.Of(rg), guard.Of(kg), guard.Of(tg)) {
		return true
	}
	c.guard = true
	stages := c.e.Chain.Input
	if len(stages) == 0 {
		return true
	}
	if !h.readWhole(ctx, c) {
		return false
	}
	return h.judge(ctx, c, guard.Input, stages, c.body, ctx.Request.Header.ContentType())
}

// judge runs stages over body's text; false when it answered a rejection.
func (h *Handler) judge(ctx *fasthttp.RequestCtx, c *call, p guard.Phase, stages []*guard.Stage, body, ct []byte) bool {
	text, ok := ExtractText(c.text[:0], body, ct)
	c.text = text
	var d guard.Decision
	if !ok {
		d = c.e.Unreadable(p, stages)
	} else {
		role := guard.RoleUser
		if p == guard.Output {
			role = guard.RoleAssistant
		}
		c.e.AddText(guard.Text{Role: role, Part: guard.PartContent, Data: text}, true, true)
		d = c.e.Judge(ctxBackground, p, c.route.Name, stages)
	}
	if c.e.Err != nil {
		h.logger().Warn("passthrough guardrail check failed", "route", c.route.Name, "guardrail", c.e.ErrGuardrail, "err", c.e.Err.Error())
	}
	msg := msgBlockedInput
	if p == guard.Output {
		msg = msgBlockedOutput
	}
	switch d {
	case guard.Blocked:
		if c.e.Message != "" {
			msg = c.e.Message
		}
		gate.WriteError(ctx, fasthttp.StatusUnprocessableEntity, "invalid_request_error", "content_filter", msg)
		c.class = "guardrail_blocked"
		return false
	case guard.Unavailable:
		gate.WriteError(ctx, fasthttp.StatusUnprocessableEntity, "invalid_request_error", "guardrail_unavailable", msgUnavailable)
		c.class = "guardrail_unavailable"
		return false
	}
	return true
}

// outputPolicy holds the whole answer (up to MaxBodyBytes), judges its
// text as one piece, then writes it or the rejection. The answer's
// headers are already on ctx.
func (h *Handler) outputPolicy(ctx *fasthttp.RequestCtx, c *call, resp *fasthttp.Response, gap time.Duration) {
	defer func() {
		upstream.CloseStream(resp)
		fasthttp.ReleaseResponse(resp)
	}()
	var n int64
	body := c.body[:0]
	var err error
	if bs := resp.BodyStream(); bs != nil {
		if gap > 0 {
			upstream.SetReadDeadline(resp, time.Now().Add(gap))
		}
		body, err = readAll(body, &limitReader{r: bs, n: h.maxBody(), read: &n})
	} else {
		body = append(body, resp.Body()...)
	}
	c.body = body
	if err != nil {
		status, code := gate.Status(err)
		c.class, c.msg = code, upstream.Describe(err)
		gate.WriteError(ctx, status, "api_error", code, "passthrough upstream answer could not be read for its guardrails: "+c.msg)
		return
	}
	c.e.ClearTexts()
	if !h.judge(ctx, c, guard.Output, c.e.Chain.Output, body, resp.Header.ContentType()) {
		return
	}
	ctx.Response.SetBodyRaw(body)
	c.respN = int64(len(body))
}

// authorize puts a signed family's credential on req, built: a SigV4
// signature over the body read whole (bedrock), or the key's access token
// (vertex). The error is caller-safe (no credential).
func authorize(c *call, req *fasthttp.Request, cred credential) error {
	switch {
	case cred.signer != nil:
		sum := sha256.Sum256(c.body)
		var hexSum [64]byte
		hex.Encode(hexSum[:], sum[:])
		return cred.signer.SignRequest(req, string(hexSum[:]))
	case cred.tokens != nil:
		h, err := cred.tokens.Header()
		if err != nil {
			return errors.New("cannot obtain an access token for provider key " + c.route.ProviderKey.DisplayName)
		}
		req.Header.SetBytesV("Authorization", h)
	}
	return nil
}
