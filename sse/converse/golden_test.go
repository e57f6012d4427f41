package converse

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"gw/sse"
	"gw/sse/msgconv"
	"gw/sse/respconv"
	"gw/sse/transcode"
)

var update = flag.Bool("update", false, "rewrite testdata/<direction>/*.golden from the current output")

const goldenAlias = "alias-model"

// goldenFixture is one ConverseStream body: the recorded one (a byte-for-
// byte copy of /work/shared/fixtures), and hand-written streams built with
// the event-stream encoder for what no public recording covers.
type goldenFixture struct {
	name string
	body func(t *testing.T) []byte
}

var goldenFixtures = []goldenFixture{
	{"bedrock_converse_stream_text_then_tool_use", func(t *testing.T) []byte {
		b, err := os.ReadFile("../testdata/bedrock_converse_stream_text_then_tool_use.eventstream")
		if err != nil {
			t.Fatal(err)
		}
		return b
	}},
	// Claude with thinking: reasoning deltas, the signature, redacted
	// reasoning, text, two parallel tool calls with streamed arguments,
	// text after them, usage with cache tokens.
	{"synthetic_reasoning_parallel_tools", func(*testing.T) []byte {
		var b []byte
		b = frame(b, "messageStart", `{"p":"abcd","role":"assistant"}`)
		b = frame(b, "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"The user wants "}},"p":"ab"}`)
		b = frame(b, "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"two cities."}},"p":"abc"}`)
		b = frame(b, "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"EqoBCkgIARABGAIiQL+sig=="}},"p":"a"}`)
		b = frame(b, "contentBlockStop", `{"contentBlockIndex":0,"p":"abcdef"}`)
		b = frame(b, "contentBlockDelta", `{"contentBlockIndex":1,"delta":{"reasoningContent":{"redactedContent":"UkVEQUNURUQ="}},"p":"ab"}`)
		b = frame(b, "contentBlockStop", `{"contentBlockIndex":1,"p":"abcdef"}`)
		b = frame(b, "contentBlockDelta", `{"contentBlockIndex":2,"delta":{"text":"Checking \"Paris\" and Tokyo."},"p":"abcd"}`)
		b = frame(b, "contentBlockStop", `{"contentBlockIndex":2,"p":"ab"}`)
		b = frame(b, "contentBlockStart", `{"contentBlockIndex":3,"start":{"toolUse":{"toolUseId":"tooluse_A1","name":"get_weather"}},"p":"abc"}`)
		b = frame(b, "contentBlockDelta", `{"contentBlockIndex":3,"delta":{"toolUse":{"input":"{\"city\":"}},"p":"a"}`)
		b = frame(b, "contentBlockDelta", `{"contentBlockIndex":3,"delta":{"toolUse":{"input":"\"Paris\"}"}},"p":"ab"}`)
		b = frame(b, "contentBlockStop", `{"contentBlockIndex":3,"p":"abcdefg"}`)
		b = frame(b, "contentBlockStart", `{"contentBlockIndex":4,"start":{"toolUse":{"toolUseId":"tooluse_B2","name":"get_weather"}},"p":"abc"}`)
		b = frame(b, "contentBlockDelta", `{"contentBlockIndex":4,"delta":{"toolUse":{"input":"{\"city\":\"Tokyo\"}"}},"p":"a"}`)
		b = frame(b, "contentBlockStop", `{"contentBlockIndex":4,"p":"ab"}`)
		b = frame(b, "contentBlockDelta", `{"contentBlockIndex":5,"delta":{"text":"Both requested."},"p":"abcd"}`)
		b = frame(b, "contentBlockStop", `{"contentBlockIndex":5,"p":"ab"}`)
		b = frame(b, "messageStop", `{"stopReason":"tool_use","p":"abcdefghij"}`)
		b = frame(b, "metadata", `{"metrics":{"latencyMs":812},"p":"abc","usage":{"cacheReadInputTokens":1024,"cacheWriteInputTokens":0,"inputTokens":35,"outputTokens":120,"totalTokens":1179}}`)
		return b
	}},
	// Content, then Bedrock's in-band modelStreamErrorException.
	{"synthetic_exception_mid_stream", func(*testing.T) []byte {
		var b []byte
		b = frame(b, "messageStart", `{"p":"ab","role":"assistant"}`)
		b = frame(b, "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Partial an"},"p":"abc"}`)
		b = exception(b, "modelStreamErrorException", `{"message":"Model stream failed: the model produced invalid output.","originalStatusCode":424}`)
		return b
	}},
	// Bedrock throttling reported in-band before any content.
	{"synthetic_throttling_before_content", func(*testing.T) []byte {
		var b []byte
		b = frame(b, "messageStart", `{"p":"ab","role":"assistant"}`)
		b = exception(b, "throttlingException", `{"message":"Too many tokens, please wait before trying again."}`)
		return b
	}},
}

type callerStage func() (transcode.Stream, func())

var goldenDirections = []struct {
	name   string
	caller callerStage
}{
	{"converse_to_chat", nil},
	{"converse_to_messages", func() (transcode.Stream, func()) {
		s := msgconv.AcquireChatToMessagesStream([]byte(goldenAlias))
		return s, func() { msgconv.ReleaseChatToMessagesStream(s) }
	}},
	{"converse_to_responses", func() (transcode.Stream, func()) {
		s := respconv.NewChatToResponsesStream()
		s.Reset([]byte(goldenAlias))
		s.(*respconv.ChatToResponses).SetRequest(nil)
		return s, func() { respconv.ReleaseStream(s) }
	}},
}

// relay drives an event-stream body through Source, ToChatStream and the
// caller stage as edge/stream.go does: each chat frame goes to the caller's
// converter; chat [DONE] ends it; an in-band exception ends the stream
// without End (the edge then writes the caller's error frame).
func relay(src io.Reader, caller callerStage) ([]byte, error) {
	idSeq.Store(0)
	up := AcquireToChatStream([]byte(goldenAlias))
	defer ReleaseToChatStream(up)
	var conv transcode.Stream
	if caller != nil {
		c, release := caller()
		defer release()
		conv = c
	}
	var out, chat []byte
	feed := func(b []byte) error {
		if conv == nil {
			out = append(out, b...)
			return nil
		}
		rd := sse.AcquireReader(bytes.NewReader(slices.Clone(b)))
		defer sse.ReleaseReader(rd)
		for {
			ev, err := rd.Next()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if out, err = conv.Event(out, nil, ev.Data); err != nil && !errors.Is(err, respconv.ErrUpstreamFailed) {
				return err
			}
			if sse.IsDone(ev.Data) {
				out = conv.End(out)
			}
		}
	}
	s := AcquireSource(src)
	defer ReleaseSource(s)
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if chat, err = up.Event(chat[:0], ev.Name, ev.Data); err != nil {
			return nil, err
		}
		if err := feed(chat); err != nil {
			return nil, err
		}
		if up.Err() != nil {
			out = append(out, "# upstream exception: "+up.Err().Error()+"\n"...)
			return out, nil
		}
	}
	return out, feed(up.End(chat[:0]))
}

type splitReader struct {
	data []byte
	rng  *rand.Rand
}

func (r *splitReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 1+r.rng.IntN(23))], r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestGolden: every Bedrock stream through every caller format, against
// the reviewed transcript, then again at random split points (the decoder
// must give the same events whatever the read sizes).
func TestGolden(t *testing.T) {
	for _, d := range goldenDirections {
		for _, f := range goldenFixtures {
			t.Run(d.name+"/"+f.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					in := f.body(t)
					got, err := relay(bytes.NewReader(in), d.caller)
					if err != nil {
						t.Fatalf("cannot relay: %v", err)
					}
					checkJSONFrames(t, got)
					golden := filepath.Join("testdata", d.name, f.name+".golden")
					if *update {
						_ = os.MkdirAll(filepath.Dir(golden), 0o755)
						if err := os.WriteFile(golden, got, 0o644); err != nil {
							t.Fatal(err)
						}
					}
					want, err := os.ReadFile(golden)
					if err != nil {
						t.Fatalf("cannot read the golden file (run with -update): %v", err)
					}
					if !bytes.Equal(want, got) {
						t.Fatalf("transcript differs from %s\nwant:\n%s\ngot:\n%s", golden, want, got)
					}
					h := fnv.New64a()
					h.Write([]byte(golden))
					for i := range 8 {
						r := &splitReader{data: in, rng: rand.New(rand.NewPCG(h.Sum64(), uint64(i)))}
						again, err := relay(r, d.caller)
						if err != nil || !bytes.Equal(again, want) {
							t.Fatalf("split seed %d: %v\n%s", i, err, again)
						}
					}
				})
			})
		}
	}
}

// checkJSONFrames fails unless every event's data is JSON or [DONE].
func checkJSONFrames(t *testing.T, out []byte) {
	t.Helper()
	for _, e := range strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n") {
		for _, line := range strings.Split(e, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && d != "[DONE]" && !json.Valid([]byte(d)) {
				t.Fatalf("data is not JSON: %s", d)
			}
		}
	}
}

// TestStreamAllocsEveryFixture: 0 allocations per relayed event for every
// golden stream that ends cleanly (reasoning, signatures, redacted
// reasoning, parallel tool calls), once the buffers are warm. A stream
// ending in an exception builds its StreamError once (the failure path).
func TestStreamAllocsEveryFixture(t *testing.T) {
	for _, f := range goldenFixtures {
		body := f.body(t)
		r := bytes.NewReader(body)
		src := AcquireSource(r)
		s := AcquireToChatStream([]byte(goldenAlias))
		out := make([]byte, 0, 64<<10)
		run := func() {
			r.Reset(body)
			src.dec.Reset(r)
			s.Reset([]byte(goldenAlias))
			out = out[:0]
			for {
				ev, err := src.Next()
				if err != nil {
					break
				}
				out, _ = s.Event(out, ev.Name, ev.Data)
			}
			if s.Err() == nil {
				out = s.End(out)
			}
		}
		run()
		if s.Err() == nil {
			if a := testing.AllocsPerRun(50, run); a != 0 {
				t.Errorf("%s: %v allocations per stream; want 0", f.name, a)
			}
		}
		ReleaseToChatStream(s)
		ReleaseSource(src)
	}
}
