package fuzz

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"unicode/utf8"

	"gw/adapters/bedrock"
	"gw/sse/eventstream"
)

// invokeRead reads every event of an InvokeModelWithResponseStream body:
// name and data of each, and the error that ended it (nil at io.EOF).
func invokeRead(r io.Reader) ([][2][]byte, error) {
	s := bedrock.AcquireInvokeSource(r)
	defer bedrock.ReleaseInvokeSource(s)
	var out [][2][]byte
	for i := 0; i < 10000; i++ {
		ev, err := s.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out = append(out, [2][]byte{append([]byte(nil), ev.Name...), append([]byte(nil), ev.Data...)})
	}
	return out, nil
}

func invokeChunk(event string) []byte {
	return eventstream.AppendMessage(nil, []eventstream.Header{
		{Name: ":event-type", Value: "chunk"}, {Name: ":content-type", Value: "application/json"}, {Name: ":message-type", Value: "event"},
	}, []byte(`{"bytes":"`+base64.StdEncoding.EncodeToString([]byte(event))+`","p":"abc"}`))
}

// FuzzBedrockInvokeSource: the native Messages source of Bedrock's
// InvokeModelWithResponseStream never panics, gives the same events however
// the bytes arrive, names every event after its data's type, and turns
// exceptions into valid Messages error events. The input is either raw
// bytes or, to reach the base64 and JSON layers, one chunk built around
// the fuzzed event.
func FuzzBedrockInvokeSource(f *testing.F) {
	f.Add([]byte(`{"type":"message_start","message":{"id":"m","model":"c","usage":{"input_tokens":1}}}`), true, uint8(5))
	f.Add([]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}`), true, uint8(1))
	f.Add([]byte(`{"type":"ping"}`), true, uint8(3))
	f.Add(invokeChunk(`{"type":"message_stop"}`), false, uint8(7))
	f.Add(eventstream.AppendMessage(nil, []eventstream.Header{{Name: ":message-type", Value: "exception"},
		{Name: ":exception-type", Value: "throttlingException"}}, []byte(`{"message":"slow \"down\""}`)), false, uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, wrap bool, split uint8) {
		in := data
		if wrap {
			in = invokeChunk(string(data))
		}
		whole, werr := invokeRead(bytes.NewReader(in))
		parts, perr := invokeRead(&splitReader{data: in, n: int(split%32) + 1})
		if len(whole) != len(parts) || (werr == nil) != (perr == nil) {
			t.Fatalf("whole: %d events, %v; split: %d events, %v", len(whole), werr, len(parts), perr)
		}
		for i, ev := range whole {
			if !bytes.Equal(ev[0], parts[i][0]) || !bytes.Equal(ev[1], parts[i][1]) {
				t.Fatalf("event %d differs by split", i)
			}
			var v struct {
				Type  string `json:"type"`
				Error *struct {
					Type, Message string
				} `json:"error"`
			}
			if string(ev[0]) == "error" {
				if err := json.Unmarshal(ev[1], &v); err == nil && v.Type == "error" && v.Error != nil && v.Error.Type != "" {
					continue
				}
				if !json.Valid(ev[1]) && !bytes.Contains(ev[1], []byte(`"type":"error"`)) {
					t.Fatalf("error event is not a Messages error: %s", ev[1])
				}
			}
			// An invalid UTF-8 type is relayed as its bytes, while
			// encoding/json decodes it with U+FFFD: compare valid names only
			// (testdata d221830dd005677c).
			if json.Valid(ev[1]) && utf8.Valid(ev[0]) {
				if err := json.Unmarshal(ev[1], &v); err == nil && v.Type != "" && v.Type != string(ev[0]) && string(ev[0]) != "error" {
					t.Fatalf("event named %q has type %q", ev[0], v.Type)
				}
			}
		}
	})
}
