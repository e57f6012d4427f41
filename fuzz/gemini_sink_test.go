package fuzz

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"gw/sse"
	"gw/sse/chatchunk"
	"gw/sse/gemini"
	"gw/sse/msgconv"
	"gw/sse/respconv"
	"gw/sse/transcode"
)

// gsUnstable are the members two runs of one stream may differ in:
// synthesised tool-call and response ids (time based or random),
// timestamps.
var gsUnstable = regexp.MustCompile(`call_[0-9a-f]+|gw[0-9a-f]{6,}|toolu_[0-9a-zA-Z]+|[0-9a-f]{16}|"created(_at)?":\d+`)

// gsStage makes a second stage for a Messages or Responses caller.
func gsStage(responses bool) (transcode.Stream, func()) {
	if responses {
		s := respconv.NewChatToResponsesStream()
		s.Reset([]byte("alias"))
		s.(*respconv.ChatToResponses).SetRequest(nil)
		return s, func() { respconv.ReleaseStream(s) }
	}
	s := msgconv.AcquireChatToMessagesStream([]byte("alias"))
	return s, func() { msgconv.ReleaseChatToMessagesStream(s) }
}

// gsChained relays events through gemini.ToChatStream's chat frames and the
// second stage, one frame at a time as edge/stream.go's chained relay does.
func gsChained(events [][]byte, responses bool) []byte {
	up := gemini.AcquireToChatStream([]byte("alias"))
	defer gemini.ReleaseToChatStream(up)
	conv, release := gsStage(responses)
	defer release()
	var out []byte
	feed := func(chat []byte) {
		for len(chat) > 0 {
			end := bytes.Index(chat, []byte("\n\n"))
			if end < 0 {
				end = len(chat)
			}
			data := bytes.TrimPrefix(chat[:end], []byte("data: "))
			chat = chat[min(end+2, len(chat)):]
			out, _ = conv.Event(out, nil, data)
			if sse.IsDone(data) {
				out = conv.End(out)
			}
		}
	}
	for _, ev := range events {
		chat, _ := up.Event(nil, nil, ev)
		feed(chat)
		if up.Err() != nil {
			return out
		}
	}
	feed(up.End(nil))
	return out
}

// gsSink relays the same events with the second stage as the sink.
func gsSink(events [][]byte, responses bool) []byte {
	up := gemini.AcquireToChatStream([]byte("alias"))
	defer gemini.ReleaseToChatStream(up)
	conv, release := gsStage(responses)
	defer release()
	up.SetSink(conv.(chatchunk.Sink))
	var out []byte
	for _, ev := range events {
		var err error
		out, err = up.Event(out, nil, ev)
		if err != nil && !errors.Is(err, respconv.ErrUpstreamFailed) && !errors.Is(err, gemini.ErrMalformedEvent) {
			panic("unexpected error from the sink: " + err.Error())
		}
		if up.Err() != nil {
			return out
		}
	}
	return conv.End(up.End(out))
}

func gsRead(f *testing.F, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// FuzzGeminiSink: any sequence of Gemini events (one per line of the
// input) gives a Messages and a Responses caller the same events whether
// gemini.ToChatStream hands its chunks to the second stage directly
// (SetSink) or writes them as chat frames the second stage reads again.
func FuzzGeminiSink(f *testing.F) {
	for _, path := range []string{
		"../sse/testdata/gemini_stream_text.sse",
		"../sse/testdata/gemini_stream_function_call.sse",
		"../sse/gemini/testdata/synthetic_thinking_parallel_calls.sse",
		"../sse/gemini/testdata/synthetic_safety_finish.sse",
		"../sse/gemini/testdata/synthetic_prompt_blocked.sse",
		"../sse/gemini/testdata/synthetic_error_mid_stream.sse",
	} {
		var lines []string
		for _, l := range strings.Split(string(gsRead(f, path)), "\n") {
			if d, ok := strings.CutPrefix(strings.TrimSpace(l), "data: "); ok {
				lines = append(lines, d)
			}
		}
		f.Add(strings.Join(lines, "\n"))
	}
	f.Add(`{"candidates":[{"content":{"parts":[{"text":"a\"\u00e9\ud800"},{"text":"b","thought":true},{"functionCall":{"name":"f\u0041","args":{"x":"\u2028"},"id":"c\"1"}}]},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":-3,"thoughtsTokenCount":2,"cachedContentTokenCount":1}}`)
	f.Add(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"g"}},{"functionCall":{"name":1}},{"text":"x"}]}}]}` + "\n" + `{"error":{"code":400,"message":"bad \u00e9","status":"INVALID_ARGUMENT"}}`)
	f.Add(`{"candidates":[{"content":{"parts":[{"text":"x"}]}}],"responseId":"r\"1"}` + "\n" + `not json` + "\n" + `{"promptFeedback":{"blockReason":"OTHER"}}`)
	f.Fuzz(func(t *testing.T, in string) {
		var events [][]byte
		for _, l := range strings.Split(in, "\n") {
			events = append(events, []byte(l))
		}
		for _, responses := range []bool{false, true} {
			want := gsUnstable.ReplaceAll(gsChained(events, responses), []byte("X"))
			got := gsUnstable.ReplaceAll(gsSink(events, responses), []byte("X"))
			if !bytes.Equal(got, want) {
				t.Fatalf("responses=%v: the sink's events differ from the chained stages'\nsink:\n%s\nchained:\n%s", responses, got, want)
			}
		}
	})
}
