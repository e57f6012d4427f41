package bedrock

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/bodyrules"
	"gw/sse/rawjson"
)

// The native Messages path: a /v1/messages caller on a Claude model goes to
// InvokeModel (/model/{modelId}/invoke) or InvokeModelWithResponseStream
// (/invoke-with-response-stream) with its own Messages body, so every
// field Converse has no form for (thinking blocks with their signatures,
// cache_control, citations, server tools, betas) reaches the model, and the
// answer (a Messages body, or Messages events in event-stream `chunk`
// frames, see InvokeSource) goes back as Anthropic wrote it. Other models
// and the other caller formats keep Converse.

// AnthropicVersion is the anthropic_version of InvokeModel Claude bodies.
const AnthropicVersion = "bedrock-2023-05-31"

var (
	_ adapters.NativeBuilder = (*Adapter)(nil)
	_ adapters.NativeModeler = (*Adapter)(nil)

	valVersion  = []byte(`"` + AnthropicVersion + `"`)
	hdrBeta     = []byte("anthropic-beta")
	nativeRules = bodyrules.Renames | bodyrules.Clamp | bodyrules.Defaults
)

// NativeBase implements adapters.NativeBuilder: Messages is served natively
// (for Claude models: NativeModel); count_tokens is counted by gw.
func (a *Adapter) NativeBase(s adapters.Surface) string {
	if s == adapters.SurfaceMessages {
		return a.base
	}
	return ""
}

// NativeModel implements adapters.NativeModeler: only Claude models take
// the Messages body on InvokeModel.
func (a *Adapter) NativeModel(s adapters.Surface, model string) bool {
	return s == adapters.SurfaceMessages && IsAnthropic(model)
}

// BuildNative implements adapters.NativeBuilder: the caller's Messages body
// without `model` (it is in the path) and `stream` (the operation says it;
// Bedrock refuses the member), with anthropic_version bedrock-2023-05-31
// and the caller's anthropic-beta header as the body's anthropic_beta
// array (Bedrock reads betas there), after the key's body rules.
func (a *Adapter) BuildNative(req *fasthttp.Request, in *adapters.ChatInput, sf adapters.Surface) error {
	if !a.NativeModel(sf, in.UpstreamModel) {
		return adapters.ErrUnsupported
	}
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	body := in.Body
	var err error
	if a.body != nil {
		bs := bodyrules.AcquireScratch()
		defer bodyrules.ReleaseScratch(bs)
		if body, err = a.body.Apply(body, nativeRules, bs); err != nil {
			return adapters.ErrBody
		}
	}
	if s.body, err = rawjson.Delete(s.body[:0], body, "model"); err != nil {
		return adapters.ErrBody
	}
	if s.url, err = rawjson.Delete(s.url[:0], s.body, "stream"); err != nil {
		return adapters.ErrBody
	}
	if s.body, err = rawjson.Set(s.body[:0], s.url, "anthropic_version", valVersion); err != nil {
		return adapters.ErrBody
	}
	if in.ClientHeaders != nil {
		if beta := in.ClientHeaders.PeekBytes(hdrBeta); len(beta) > 0 {
			if _, _, ok := rawjson.Get(s.body, "anthropic_beta"); !ok {
				s.hdr = appendBetas(s.hdr[:0], beta)
				s.url = append(s.url[:0], s.body...)
				if s.body, err = rawjson.Set(s.body[:0], s.url, "anthropic_beta", s.hdr); err != nil {
					return adapters.ErrBody
				}
			}
		}
	}
	op := "/invoke"
	if in.Stream {
		op = "/invoke-with-response-stream"
	}
	return a.send(req, in, s, in.UpstreamModel, op, in.Stream)
}

// appendBetas appends the JSON array of a comma-separated anthropic-beta
// header's names.
func appendBetas(dst, header []byte) []byte {
	dst = append(dst, '[')
	n := 0
	for f := range bytes.SplitSeq(header, []byte{','}) {
		if f = bytes.TrimSpace(f); len(f) == 0 {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = rawjson.AppendQuoteBytes(dst, f)
		n++
	}
	return append(dst, ']')
}
