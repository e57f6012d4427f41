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

// readEvents reads the SSE events of one stream from r until EOF or an error, and
// records their figures into smp: events and chunks counted, the time of the first
// content chunk in smp.token (smp.token must be < 0 on entry), and [DONE]. The gaps
// between consecutive data events are appended to gaps in µs. The error is nil at a
// clean EOF.
func readEvents(r *sse.Reader, clk clock, smp *sample, gaps []int64) ([]int64, error) {
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
		if sse.IsDone(ev.Data) {
			smp.sawDone = true
			continue
		}
		if smp.events > 0 {
			gaps = append(gaps, int64((t-last)/time.Microsecond))
		}
		last = t
		smp.events++
		if deltaHasContent(ev.Data) {
			smp.chunks++
			if smp.token < 0 {
				smp.token = t
			}
		}
	}
}
