package edge

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/edge/guard"
	"gw/sse"
	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// /v1/images/generations (JSON): an endpoint surface (endpoints.go). The
// buffered answer ({"created","data":[{"b64_json"|"url","revised_prompt"}],
// "usage"}) is relayed as the upstream wrote it — image bytes are never
// decoded; a stream ("stream": true, gpt-image-1's partial images) relays
// its image_generation.* events as they come. Usage is the answer's
// input_tokens / output_tokens.

var pathImages = "/v1/images/generations"

var specImages = endpointSpec{
	keys: []string{"model", "stream", "stream_options", "prompt", "n", "partial_images"}, streams: true,
}

var surfImages = &surface{
	read:    func(ctx *fasthttp.RequestCtx, c *call) bool { return readEndpoint(ctx, c, &specImages) },
	guardIn: guard.ImagesRequest, guardNative: guard.ImagesAnswer,
	path: pathImages, protocol: "images", operation: "images.generations",
	endpoint: adapters.EndpointImages, nativeUsage: imagesUsage,
	nativeEvent: imagesEvent, nativeFail: imagesFail, nativeErrBody: completionsErrBody,
}

// checkImages: prompt is a non-empty string; n and partial_images are
// non-negative integers (n at least 1).
func checkImages(v [][]byte) (string, string) {
	if rawjson.KindOf(v[0]) != rawjson.String || len(v[0]) < 3 {
		return "invalid_type", "prompt: must be a non-empty string"
	}
	if n := v[1]; n != nil {
		if k, ok := rawjson.ParseInt(n); !ok || k < 1 {
			return "invalid_value", "n: must be a positive integer"
		}
	}
	if p := v[2]; p != nil {
		if k, ok := rawjson.ParseInt(p); !ok || k < 0 {
			return "invalid_value", "partial_images: must be a non-negative integer"
		}
	}
	return "", ""
}

// imagesUsage reads an image answer's (or completed event's) usage:
// input_tokens, output_tokens, total_tokens.
func imagesUsage(body []byte) (adapters.Usage, bool) {
	u, kind, ok := rawjson.Get(body, "usage")
	if !ok || kind != rawjson.Object {
		return adapters.Usage{}, false
	}
	var v [3][]byte
	if rawjson.ScanTop(u, imagesUsageKeys, v[:]) != nil {
		return adapters.Usage{}, false
	}
	in, _ := rawjson.ParseInt(v[0])
	out, _ := rawjson.ParseInt(v[1])
	total, ok := rawjson.ParseInt(v[2])
	if !ok {
		total = in + out
	}
	return adapters.Usage{Prompt: in, Completion: out, Total: total}, true
}

var (
	imagesUsageKeys  = []string{"input_tokens", "output_tokens", "total_tokens"}
	evImagePrefix    = []byte("image_generation.")
	evImageCompleted = []byte("image_generation.completed")
	evImagePartial   = []byte("image_generation.partial_image")
)

// imagesEvent relays one image-generation event unchanged: partial images
// and the completed image are content (the commit point); completed ends
// the stream and carries the usage; `error` is the upstream's failure.
func imagesEvent(s *relayState, c *call, ev sse.Event) evFlags {
	typ := eventType(ev)
	s.out = sse.AppendEvent(s.out[:0], ev.Name, ev.Data)
	switch {
	case bytesEq(typ, evImageCompleted):
		if u, ok := imagesUsage(ev.Data); ok {
			c.usage, c.haveUsage = u, true
		}
		return evContent | evEnd
	case bytesEq(typ, evImagePartial), bytes.HasPrefix(typ, evImagePrefix):
		return evContent
	case bytesEq(typ, evError), bytes.HasPrefix(ev.Data, errorPrefixJSON):
		c.errClass = "upstream_error_event"
		return evEnd | evFailed
	}
	return 0
}

// eventType is an event's name, or for data-only framing the "type" of
// its payload.
func eventType(ev sse.Event) []byte {
	if len(ev.Name) > 0 {
		return ev.Name
	}
	if t, kind, ok := rawjson.Get(ev.Data, "type"); ok && kind == rawjson.String {
		return t[1 : len(t)-1]
	}
	return nil
}

var (
	imagesTimeout = []byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"server_error\",\"code\":\"" + transcode.CodeTimeout + "\",\"message\":\"the upstream stream stalled longer than stream_timeout\"}}\n\n")
	imagesBroken  = []byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"server_error\",\"code\":\"" + transcode.CodeUpstreamStreamFail + "\",\"message\":\"the upstream stream failed\"}}\n\n")
)

// imagesFail ends an image stream gw cuts short with an `error` event.
func imagesFail(dst []byte, _ *relayState, _ *call, code string) []byte {
	if code == transcode.CodeTimeout {
		return append(dst, imagesTimeout...)
	}
	return append(dst, imagesBroken...)
}
