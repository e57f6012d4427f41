package load

import (
	"bytes"
	"io"
	"time"

	"gw/sse"
	"gw/sse/rawjson"
)

var strContentKey = []byte(`"content"`)

// deltaHasContent reports whether the chat.completion.chunk in data has a choice whose
// delta carries a non-empty content string: a token, as opposed to the role chunk
// (content ""), the finish chunk, a usage chunk (choices []) or a tool-call fragment.
// It does not allocate.
func deltaHasContent(data []byte) bool {
	// Fast path - most events that carry no token carry no "content" key either.
	if !bytes.Contains(data, strContentKey) {
		return false
	}
	choices, kind, ok := rawjson.Get(data, "choices")
	if !ok || kind != rawjson.Array {
		return false
	}
	found := false
	_ = rawjson.ForEachElem(choices, func(_ int, choice []byte, kind rawjson.Kind) bool {
		if kind != rawjson.Object {
			return true
		}
		content, kind, ok := rawjson.GetPath(choice, "delta", "content")
		// A string span keeps its quotes: `""` is empty.
		found = ok && kind == rawjson.String && len(content) > 2
		return !found
	})
	return found
}

// eventKind is what a stream event means to the figures.
type eventKind uint8

const (
	evOther   eventKind = iota // counted as an event, no token
	evContent                  // a token: counted as an event and a chunk
	evEnd                      // the stream's terminator: not counted as an event
)

// classifyChat reads a chat.completion.chunk: content by deltaHasContent, end [DONE].
func classifyChat(data []byte) eventKind {
	if sse.IsDone(data) {
		return evEnd
	}
	if deltaHasContent(data) {
		return evContent
	}
	return evOther
}

// keysTypeDelta are the members ScanTop reads from a Messages or Responses event.
var keysTypeDelta = []string{"type", "delta"}

// classifyMessages reads an Anthropic Messages stream event by its JSON type (which equals
// its `event:` line): content is a content_block_delta whose delta.text is a non-empty
// string (a text_delta; input_json_delta and thinking_delta carry no text), the end is
// message_stop. It does not allocate.
func classifyMessages(data []byte) eventKind {
	var vals [2][]byte
	if rawjson.ScanTop(data, keysTypeDelta, vals[:]) != nil {
		return evOther
	}
	switch typ := vals[0]; {
	case rawjson.StringEquals(typ, "content_block_delta"):
		text, kind, ok := rawjson.Get(vals[1], "text")
		// A string span keeps its quotes: `""` is empty.
		if ok && kind == rawjson.String && len(text) > 2 {
			return evContent
		}
	case rawjson.StringEquals(typ, "message_stop"):
		return evEnd
	}
	return evOther
}

// classifyResponses reads an OpenAI Responses stream event by its JSON type: content is a
// response.output_text.delta whose delta is a non-empty string, the end is
// response.completed. It does not allocate.
func classifyResponses(data []byte) eventKind {
	var vals [2][]byte
	if rawjson.ScanTop(data, keysTypeDelta, vals[:]) != nil {
		return evOther
	}
	switch typ := vals[0]; {
	case rawjson.StringEquals(typ, "response.output_text.delta"):
		if rawjson.KindOf(vals[1]) == rawjson.String && len(vals[1]) > 2 {
			return evContent
		}
	case rawjson.StringEquals(typ, "response.completed"):
		return evEnd
	}
	return evOther
}

// readEvents reads the SSE events of one stream from r until EOF or an error, and
// records their figures into smp: events and chunks counted (classify tells which events
// carry content), the time of the first content chunk in smp.token (smp.token must be < 0
// on entry), and the terminator. The gaps between consecutive data events (the
// terminator excluded) are appended to gaps in µs. The error is nil at a clean EOF.
func readEvents(r *sse.Reader, clk clock, classify func([]byte) eventKind, smp *sample, gaps []int64) ([]int64, error) {
	var last time.Duration
	for {
		ev, err := r.Next()
		if err != nil {
			if err == io.EOF {
				return gaps, nil
			}
			return gaps, err
		}
		t := clk.now()
		kind := classify(ev.Data)
		if kind == evEnd {
			smp.sawDone = true
			continue
		}
		if smp.events > 0 {
			gaps = append(gaps, int64((t-last)/time.Microsecond))
		}
		last = t
		smp.events++
		if kind == evContent {
			smp.chunks++
			if smp.token < 0 {
				smp.token = t
			}
		}
	}
}
