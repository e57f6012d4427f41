package fuzz

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"gw/sse"
	"gw/sse/converse"
	"gw/sse/eventstream"
	"gw/sse/rawjson"
)

func bedrockFixture(f *testing.F) []byte {
	b, err := os.ReadFile(filepath.Join("..", "sse", "testdata", "bedrock_converse_stream_text_then_tool_use.eventstream"))
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// splitReader returns data in reads of at most n bytes.
type splitReader struct {
	data []byte
	n    int
}

func (r *splitReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), r.n)], r.data)
	r.data = r.data[k:]
	return k, nil
}

type decoded struct {
	msgs [][]byte // event type + 0 + payload
	err  error
}

func decodeES(r io.Reader, limit int) decoded {
	d := eventstream.Acquire(r)
	d.MaxMessageSize = limit
	defer eventstream.Release(d)
	var out decoded
	for i := 0; i < 10000; i++ {
		m, err := d.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				out.err = err
			}
			return out
		}
		rec := append(append(append([]byte(nil), m.EventType...), 0), m.Payload...)
		out.msgs = append(out.msgs, rec)
	}
	return out
}

// FuzzEventStreamDecoder: the decoder never panics, its result does not
// depend on how the bytes arrive, and every message it accepts re-encodes
// (with its string headers) to a frame Decode accepts.
func FuzzEventStreamDecoder(f *testing.F) {
	fx := bedrockFixture(f)
	f.Add(fx, uint8(7))
	f.Add(fx[:200], uint8(1))
	f.Add(eventstream.AppendMessage(nil, []eventstream.Header{{Name: ":message-type", Value: "exception"}, {Name: ":exception-type", Value: "throttlingException"}}, []byte(`{"message":"x"}`)), uint8(3))
	f.Add([]byte{0, 0, 0, 16, 0, 0, 0, 0, 0x05, 0xc2, 0x48, 0xeb, 0x7d, 0x98, 0xc8, 0xff}, uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, split uint8) {
		whole := decodeES(bytes.NewReader(data), 1<<16)
		parts := decodeES(&splitReader{data: data, n: int(split%64) + 1}, 1<<16)
		if len(whole.msgs) != len(parts.msgs) || !errors.Is(parts.err, whole.err) && (whole.err == nil) != (parts.err == nil) {
			t.Fatalf("whole: %d msgs, %v; split: %d msgs, %v", len(whole.msgs), whole.err, len(parts.msgs), parts.err)
		}
		for i := range whole.msgs {
			if !bytes.Equal(whole.msgs[i], parts.msgs[i]) {
				t.Fatalf("message %d differs by split", i)
			}
		}
		// Frames of the input that decode alone.
		for b := data; len(b) >= 16; {
			n := int(b[0])<<24 | int(b[1])<<16 | int(b[2])<<8 | int(b[3])
			if n < 16 || n > len(b) {
				break
			}
			if m, err := eventstream.Decode(b[:n]); err == nil {
				var hs []eventstream.Header
				_ = eventstream.ForEachHeader(m.Headers, func(name []byte, typ byte, val []byte) {
					if typ == 7 {
						hs = append(hs, eventstream.Header{Name: string(name), Value: string(val)})
					}
				})
				if _, err := eventstream.Decode(eventstream.AppendMessage(nil, hs, m.Payload)); err != nil {
					t.Fatalf("re-encoded message does not decode: %v", err)
				}
			}
			b = b[n:]
		}
	})
}

// FuzzConverseStream: any sequence of events (one per line: name, a space,
// the payload) gives well-framed chat chunks whose data is JSON.
func FuzzConverseStream(f *testing.F) {
	// The fixture's events as lines.
	var lines []byte
	src := converse.AcquireSource(bytes.NewReader(bedrockFixture(f)))
	for {
		ev, err := src.Next()
		if err != nil {
			break
		}
		lines = append(append(append(append(lines, ev.Name...), ' '), ev.Data...), '\n')
	}
	converse.ReleaseSource(src)
	f.Add(lines)
	f.Add([]byte("messageStart {}\ncontentBlockDelta {\"contentBlockIndex\":0,\"delta\":{\"reasoningContent\":{\"text\":\"\\u00e9\\n\"}}}\nthrottlingException {\"message\":\"slow\"}\n"))
	f.Add([]byte("contentBlockDelta {\"contentBlockIndex\":3,\"delta\":{\"toolUse\":{\"input\":\"{\\\"a\"}}}\nmetadata {\"usage\":{\"inputTokens\":-1,\"outputTokens\":1e3}}\n"))
	f.Add([]byte("error {\"code\":\"x\",\"message\":\"\\ud800\"}\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		s := converse.AcquireToChatStream([]byte("m\"odel"))
		defer converse.ReleaseToChatStream(s)
		var out []byte
		for _, line := range bytes.Split(in, []byte("\n")) {
			name, data, _ := bytes.Cut(line, []byte(" "))
			out, _ = s.Event(out, name, data)
		}
		if s.Err() == nil {
			out = s.End(out)
		}
		rd := sse.AcquireReader(bytes.NewReader(out))
		defer sse.ReleaseReader(rd)
		for {
			ev, err := rd.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil || ev.Unterminated {
				t.Fatalf("bad framing %v in %q", err, out)
			}
			if !sse.IsDone(ev.Data) && !rawjson.Valid(ev.Data) {
				t.Fatalf("chunk is not JSON: %q", ev.Data)
			}
		}
	})
}

// FuzzConverseBodies: request and buffered-answer conversions give valid
// JSON or an error, never a panic.
func FuzzConverseBodies(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto","reasoning_effort":"high","stop":"x"}`))
	f.Add([]byte(`{"output":{"message":{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"t","signature":"s"}}},{"text":"a"},{"toolUse":{"toolUseId":"i","name":"n","input":{"a":[1]}}}]}},"stopReason":"tool_use","usage":{"inputTokens":1,"outputTokens":2,"totalTokens":3}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if out, err := converse.ChatRequestToConverse(nil, body, converse.RequestOptions{Anthropic: len(body)%2 == 0}); err == nil && !rawjson.Valid(out) {
			t.Fatalf("request conversion wrote invalid JSON: %s", out)
		}
		if out, _, err := converse.ResponseToChat(nil, body, []byte("alias")); err == nil && !rawjson.Valid(out) {
			t.Fatalf("answer conversion wrote invalid JSON: %s", out)
		}
	})
}
