package edge

import (
	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/edge/guard"
	"gw/sse"
	"gw/sse/rawjson"
)

// /v1/audio/speech: an endpoint surface (endpoints.go) whose answer is
// audio. By default the upstream's bytes are relayed as they arrive
// (binary.go), never buffered whole; with "stream_format": "sse" the
// speech.audio.delta / speech.audio.done events are relayed like any
// native stream and the usage of speech.audio.done recorded. Guardrails
// judge the input text; audio has no text to judge.

var pathSpeech = "/v1/audio/speech"

var specSpeech = endpointSpec{
	keys: []string{"model", "stream", "stream_options", "input", "voice", "stream_format"},
}

var surfSpeech = &surface{
	read:    func(ctx *fasthttp.RequestCtx, c *call) bool { return readEndpoint(ctx, c, &specSpeech) },
	guardIn: guard.SpeechRequest, guardNative: guard.TextlessAnswer,
	path: pathSpeech, protocol: "audio", operation: "audio.speech",
	endpoint: adapters.EndpointSpeech, binary: true, dispatch: dispatchSpeech,
	nativeEvent: speechEvent, nativeFail: imagesFail, nativeErrBody: completionsErrBody,
}

// checkSpeech: input is a non-empty string, voice a name or a custom
// voice object, stream_format "audio" or "sse".
func checkSpeech(v [][]byte) (string, string) {
	if rawjson.KindOf(v[0]) != rawjson.String || len(v[0]) < 3 {
		return "invalid_type", "input: must be a non-empty string"
	}
	if k := rawjson.KindOf(v[1]); k != rawjson.String && k != rawjson.Object {
		return "missing_required_parameter", "voice: a voice name or object is required"
	}
	if f := v[2]; f != nil && !rawjson.StringEquals(f, "audio") && !rawjson.StringEquals(f, "sse") {
		return "invalid_value", "stream_format: must be 'audio' or 'sse'"
	}
	return "", ""
}

// dispatchSpeech streams SSE speech; audio goes through the binary relay.
func dispatchSpeech(p *Proxy, ctx *fasthttp.RequestCtx, c *call) {
	if c.cr.Stream {
		p.stream(ctx, c)
		return
	}
	p.binary(ctx, c)
}

var (
	evSpeechDelta = []byte("speech.audio.delta")
	evSpeechDone  = []byte("speech.audio.done")
)

// speechEvent relays one speech event unchanged: audio deltas are content,
// speech.audio.done ends the stream with the usage.
func speechEvent(s *relayState, c *call, ev sse.Event) evFlags {
	typ := eventType(ev) // images.go
	s.out = sse.AppendEvent(s.out[:0], ev.Name, ev.Data)
	switch {
	case bytesEq(typ, evSpeechDelta):
		return evContent
	case bytesEq(typ, evSpeechDone):
		if u, ok := imagesUsage(ev.Data); ok {
			c.usage, c.haveUsage = u, true
		}
		return evContent | evEnd
	case bytesEq(typ, evError), rawjson.KindOf(ev.Data) == rawjson.Object && hasErrorMember(ev.Data):
		c.errClass = "upstream_error_event"
		return evEnd | evFailed
	}
	return 0
}

func hasErrorMember(data []byte) bool {
	_, kind, ok := rawjson.Get(data, "error")
	return ok && kind == rawjson.Object
}
