package gemini

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
	"gw/sse/chatchunk"
	"gw/sse/msgconv"
	"gw/sse/respconv"
	"gw/sse/transcode"
)

var update = flag.Bool("update", false, "rewrite testdata/<direction>/*.golden from the current output")

const goldenAlias = "alias-model"

// goldenFixtures: the recorded Gemini streams, then the hand-written ones.
var goldenFixtures = []string{
	"../testdata/gemini_stream_text.sse",
	"../testdata/gemini_stream_function_call.sse",
	"testdata/synthetic_thinking_parallel_calls.sse",
	"testdata/synthetic_safety_finish.sse",
	"testdata/synthetic_prompt_blocked.sse",
	"testdata/synthetic_error_mid_stream.sse",
}

// callerStage converts the chat chunks of ToChatStream to a caller format
// (nil: chat callers get the chunks as they are).
type callerStage func() (transcode.Stream, func())

var goldenDirections = []struct {
	name   string
	caller callerStage
}{
	{"gemini_to_chat", nil},
	{"gemini_to_messages", func() (transcode.Stream, func()) {
		s := msgconv.AcquireChatToMessagesStream([]byte(goldenAlias))
		return s, func() { msgconv.ReleaseChatToMessagesStream(s) }
	}},
	{"gemini_to_responses", func() (transcode.Stream, func()) {
		s := respconv.NewChatToResponsesStream()
		s.Reset([]byte(goldenAlias))
		s.(*respconv.ChatToResponses).SetRequest(nil)
		return s, func() { respconv.ReleaseStream(s) }
	}},
}

// relay drives src through ToChatStream and the caller stage as
// edge/stream.go does: each chat frame goes, without name, to the caller's
// converter; chat [DONE] ends it; an in-band upstream error ends the stream
// without End.
func relay(src io.Reader, caller callerStage) ([]byte, error) {
	idSeq.Store(0) // synthesised tool-call ids are time ^ sequence
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
	rd := sse.AcquireReader(src)
	defer sse.ReleaseReader(rd)
	for {
		ev, err := rd.Next()
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
			return out, nil
		}
	}
	return out, feed(up.End(chat[:0]))
}

// relaySink drives src through ToChatStream with the caller stage as its
// sink (SetSink): no chat frames between the stages. Its transcript must be
// the chained relay's, byte for byte.
func relaySink(src io.Reader, caller callerStage) ([]byte, error) {
	idSeq.Store(0)
	up := AcquireToChatStream([]byte(goldenAlias))
	defer ReleaseToChatStream(up)
	conv, release := caller()
	defer release()
	up.SetSink(conv.(chatchunk.Sink))
	var out []byte
	rd := sse.AcquireReader(src)
	defer sse.ReleaseReader(rd)
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if out, err = up.Event(out, ev.Name, ev.Data); err != nil && !errors.Is(err, respconv.ErrUpstreamFailed) {
			return nil, err
		}
		if up.Err() != nil {
			return out, nil
		}
	}
	return conv.End(up.End(out)), nil
}

type splitReader struct {
	data []byte
	rng  *rand.Rand
}

func (r *splitReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 1+r.rng.IntN(17))], r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestGolden: every fixture through every caller format, chained as the
// edge chains the stages and (Messages and Responses) with the second stage
// as ToChatStream's sink, whole and at random split points, against the
// same golden transcripts.
func TestGolden(t *testing.T) {
	for _, d := range goldenDirections {
		for _, f := range goldenFixtures {
			name := strings.TrimSuffix(filepath.Base(f), ".sse")
			t.Run(d.name+"/"+name, func(t *testing.T) {
				testGolden(t, d.name, f, name, d.caller, relay)
			})
			if d.caller == nil {
				continue
			}
			t.Run(d.name+"/sink/"+name, func(t *testing.T) {
				testGolden(t, d.name, f, name, d.caller, relaySink)
			})
		}
	}
}

func testGolden(t *testing.T, dir, f, name string, caller callerStage, relay func(io.Reader, callerStage) ([]byte, error)) {
	synctest.Test(t, func(t *testing.T) {
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := relay(bytes.NewReader(in), caller)
		if err != nil {
			t.Fatalf("cannot relay: %v", err)
		}
		checkJSONFrames(t, got)
		golden := filepath.Join("testdata", dir, name+".golden")
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
		// The same bytes at random split points.
		h := fnv.New64a()
		h.Write([]byte(golden))
		for i := range 8 {
			r := &splitReader{data: in, rng: rand.New(rand.NewPCG(h.Sum64(), uint64(i)))}
			again, err := relay(r, caller)
			if err != nil || !bytes.Equal(again, want) {
				t.Fatalf("split seed %d: %v\n%s", i, err, again)
			}
		}
	})
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
