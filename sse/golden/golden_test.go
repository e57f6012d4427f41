package golden_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
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

var update = flag.Bool("update", false, "rewrite the golden files in testdata/<direction>/ from the current transcoder output")

// alias is the caller-facing model name every stream is Reset with.
const alias = "alias-model"

// bubbleUnix is time.Now().Unix() inside a synctest bubble
// (2000-01-01T00:00:00Z): the `created` of MessagesToChat chunks.
const bubbleUnix = 946684800

// The recorded streams, by format (testdata/in).
var (
	chatFixtures = []string{
		"openai_chat_text.sse",
		"openai_chat_include_usage_finish_length.sse",
		"openai_chat_parallel_tool_calls_include_usage.sse",
		"azure_openai_chat_text_content_filter.sse",
	}
	messagesFixtures = []string{
		"anthropic_text.sse",
		"anthropic_text_then_parallel_tool_use.sse",
		"anthropic_thinking_then_text.sse",
		"anthropic_tool_use_json.jsonl",
	}
	responsesFixtures = []string{
		"openai_responses_text.sse",
		"openai_responses_function_call_legacy_no_seq.sse",
		"openai_responses_reasoning_then_function_call.sse",
		"openai_responses_reasoning_summary_multi_request.jsonl",
		// An `error` event (insufficient_quota) then response.failed: chat
		// callers get one error frame typed insufficient_quota, as OpenAI
		// types it.
		"openai_responses_error_then_failed.jsonl",
	}
)

// stage makes one transcoder of a pipeline, reset for alias and set up,
// and returns it with the function that releases it.
type stage func() (transcode.Stream, func())

func chatToMessages() (transcode.Stream, func()) {
	s := msgconv.AcquireChatToMessagesStream([]byte(alias))
	return s, func() { msgconv.ReleaseChatToMessagesStream(s) }
}

func messagesToChat() (transcode.Stream, func()) {
	s := msgconv.AcquireMessagesToChatStream([]byte(alias))
	return s, func() { msgconv.ReleaseMessagesToChatStream(s) }
}

// chatToResponses is set up as edge/surface.go does, with no request to
// echo (the echoed settings keep their defaults).
func chatToResponses() (transcode.Stream, func()) {
	s := respconv.NewChatToResponsesStream()
	s.Reset([]byte(alias))
	s.(*respconv.ChatToResponses).SetRequest(nil)
	return s, func() { respconv.ReleaseStream(s) }
}

// responsesToChat sends the usage chunk: a chat caller that asked for
// stream_options.include_usage, and what ChatToMessages needs downstream
// (MessagesRequestToChat forces include_usage the same way).
func responsesToChat() (transcode.Stream, func()) {
	s := respconv.NewResponsesToChatStream()
	s.Reset([]byte(alias))
	s.(*respconv.ResponsesToChat).SetIncludeUsage(true)
	return s, func() { respconv.ReleaseStream(s) }
}

// direction is one transcoder pipeline; its golden files live in
// testdata/<name>/.
type direction struct {
	name     string
	fixtures []string
	stages   []stage
	// chatIn: the fixtures are chat completions streams, whose [DONE]
	// ends the stream.
	chatIn bool
	// roundTrip: the output must carry the same text, tool calls, usage
	// and finish reason as the input.
	roundTrip bool
}

var directions = []direction{
	{name: "chat_to_messages", fixtures: chatFixtures, stages: []stage{chatToMessages}, chatIn: true},
	{name: "chat_to_responses", fixtures: chatFixtures, stages: []stage{chatToResponses}, chatIn: true},
	{name: "messages_to_chat", fixtures: messagesFixtures, stages: []stage{messagesToChat}},
	{name: "messages_to_responses", fixtures: messagesFixtures, stages: []stage{messagesToChat, chatToResponses}},
	{name: "responses_to_chat", fixtures: responsesFixtures, stages: []stage{responsesToChat}},
	{name: "responses_to_messages", fixtures: responsesFixtures, stages: []stage{responsesToChat, chatToMessages}},
	{name: "chat_to_messages_to_chat", fixtures: chatFixtures, stages: []stage{chatToMessages, messagesToChat}, chatIn: true, roundTrip: true},
}

// goldenCase is one input stream through one direction.
type goldenCase struct {
	dir    direction
	input  []byte // the upstream SSE bytes
	golden string // path of the golden file
}

func (c goldenCase) name() string {
	return c.dir.name + "/" + strings.TrimSuffix(filepath.Base(c.golden), ".golden")
}

// cases lists every fixture × direction; a fixture holding several
// streams gives one case per stream.
func cases(tb testing.TB) []goldenCase {
	tb.Helper()
	var out []goldenCase
	for _, d := range directions {
		for _, f := range d.fixtures {
			streams := readFixture(tb, f)
			base := strings.TrimSuffix(f, filepath.Ext(f))
			for i, s := range streams {
				name := base
				if len(streams) > 1 {
					name = fmt.Sprintf("%s.%d", base, i+1)
				}
				out = append(out, goldenCase{dir: d, input: s, golden: filepath.Join("testdata", d.name, name+".golden")})
			}
		}
	}
	return out
}

// readFixture returns the SSE streams of testdata/in/name: the file itself,
// or for .jsonl (one event's data JSON per line) the lines framed as
// `event: <type>\ndata: <line>\n\n`, a new stream starting at every
// response.created after the first.
func readFixture(tb testing.TB, name string) [][]byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "in", name))
	if err != nil {
		tb.Fatalf("cannot read fixture: %s", err)
	}
	if !strings.HasSuffix(name, ".jsonl") {
		return [][]byte{b}
	}
	var streams [][]byte
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var v struct{ Type string }
		if err := json.Unmarshal(line, &v); err != nil || v.Type == "" {
			tb.Fatalf("%s line %d: cannot read the event type: %v", name, i+1, err)
		}
		if streams == nil || v.Type == "response.created" && len(streams[len(streams)-1]) > 0 {
			streams = append(streams, nil)
		}
		s := &streams[len(streams)-1]
		*s = append(*s, "event: "+v.Type+"\ndata: "...)
		*s = append(*s, line...)
		*s = append(*s, "\n\n"...)
	}
	return streams
}

// run replays the upstream stream src through the pipeline stages the way
// edge/stream.go drives them and returns the bytes the last one wrote:
//
//   - every upstream event goes to the first stage with its name; the chat
//     frames a stage writes go one by one, without name, to the next
//     (relayState.next); a named frame keeps its name;
//   - a stage whose input is chat completions gets `[DONE]` as an event and
//     is ended with End at once (relay: conv.Event then conv.End);
//   - at EOF each stage is ended with End in order, its output flowing on,
//     unless the first stage reported an in-band upstream error (the edge's
//     errStreamErrored: nothing more is written).
func run(src io.Reader, d direction) ([]byte, error) {
	p := &pipeline{chatIn: d.chatIn}
	stages := d.stages
	for _, mk := range stages {
		s, release := mk()
		defer release()
		p.streams = append(p.streams, s)
		p.bufs = append(p.bufs, nil)
	}
	rd := sse.AcquireReader(src)
	defer sse.ReleaseReader(rd)
	for !p.stopped {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read the upstream stream: %w", err)
		}
		if err := p.event(0, ev.Name, ev.Data); err != nil {
			return nil, err
		}
	}
	if !p.stopped && !p.failed {
		for i := range p.streams {
			if p.stopped {
				break
			}
			if err := p.end(i); err != nil {
				return nil, err
			}
		}
	}
	return p.out, nil
}

type pipeline struct {
	streams []transcode.Stream
	chatIn  bool     // the first stage reads chat completions
	bufs    [][]byte // per-stage scratch
	out     []byte   // what the last stage wrote
	failed  bool     // the first stage reported an in-band upstream error
	stopped bool     // the last stage got [DONE] and was ended
}

// event feeds one event to stage i.
func (p *pipeline) event(i int, name, data []byte) error {
	s := p.streams[i]
	last := i == len(p.streams)-1
	var out []byte
	var err error
	if last {
		p.out, err = s.Event(p.out, name, data)
	} else {
		out, err = s.Event(p.bufs[i][:0], name, data)
		p.bufs[i] = out
	}
	if err != nil && !errors.Is(err, respconv.ErrUpstreamFailed) {
		return fmt.Errorf("stage %d: Event(%q, %q): %w", i, name, data, err)
	}
	if i == 0 && (err != nil || inBandError(s)) {
		p.failed = true
	}
	if (i > 0 || p.chatIn) && sse.IsDone(data) {
		// The caller's converter after a chat upstream's [DONE] (relay).
		if last {
			p.out = s.End(p.out)
			p.stopped = true
			return nil
		}
		out = s.End(out)
	}
	if last {
		return nil
	}
	return p.forward(i+1, out)
}

// end ends stage i with End and forwards what it wrote.
func (p *pipeline) end(i int) error {
	if i == len(p.streams)-1 {
		p.out = p.streams[i].End(p.out)
		return nil
	}
	p.bufs[i] = p.streams[i].End(p.bufs[i][:0])
	return p.forward(i+1, p.bufs[i])
}

// forward feeds the events framed in b to stage i. b is copied first: the
// stage that wrote it reuses its buffer.
func (p *pipeline) forward(i int, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	rd := sse.AcquireReader(bytes.NewReader(slices.Clone(b)))
	defer sse.ReleaseReader(rd)
	for !p.stopped {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("stage %d wrote invalid SSE: %w", i-1, err)
		}
		if ev.Unterminated {
			return fmt.Errorf("stage %d wrote an unterminated event %q", i-1, ev.Raw)
		}
		if err := p.event(i, ev.Name, ev.Data); err != nil {
			return err
		}
	}
	return nil
}

// inBandError reports whether a msgconv stream saw an upstream error event.
func inBandError(s transcode.Stream) bool {
	e, ok := s.(interface{ Err() error })
	return ok && e.Err() != nil
}

// randomReader returns its data in reads of random sizes from 1 to max.
type randomReader struct {
	data []byte
	rng  *rand.Rand
	max  int
}

func (r *randomReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(r.data), 1+r.rng.IntN(r.max))
	n = copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// splitEvents cuts a transcript into its events (without the blank line
// that ends each); trailing bytes without one are a last event.
func splitEvents(b []byte) []string {
	parts := strings.Split(string(b), "\n\n")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// compareEvents fails at the first event that differs.
func compareEvents(tb testing.TB, what string, want, got []byte) {
	tb.Helper()
	w, g := splitEvents(want), splitEvents(got)
	for i := range max(len(w), len(g)) {
		switch {
		case i >= len(w):
			tb.Fatalf("%s: event #%d (0-based) is extra (want %d events, got %d):\n%s", what, i, len(w), len(g), g[i])
		case i >= len(g):
			tb.Fatalf("%s: event #%d (0-based) is missing (want %d events, got %d); want:\n%s", what, i, len(w), len(g), w[i])
		case w[i] != g[i]:
			tb.Fatalf("%s: event #%d (0-based) differs\nwant:\n%s\ngot:\n%s", what, i, w[i], g[i])
		}
	}
	if !bytes.Equal(want, got) {
		// Same events, different separators (e.g. a missing final "\n\n").
		tb.Fatalf("%s: the events match but the bytes differ: want %d bytes, got %d", what, len(want), len(got))
	}
}

// checkFraming fails unless every event of out is an SSE event whose data
// is JSON (or [DONE]) and whose `event:` name, if any, is its JSON type.
func checkFraming(tb testing.TB, out []byte) {
	tb.Helper()
	for i, e := range splitEvents(out) {
		var name, data string
		for _, line := range strings.Split(e, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				if data != "" {
					tb.Fatalf("event #%d has two data lines:\n%s", i, e)
				}
				data = line[len("data: "):]
			default:
				tb.Fatalf("event #%d has a line that is neither event: nor data::\n%s", i, e)
			}
		}
		if data == "[DONE]" {
			continue
		}
		var v struct{ Type string }
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			tb.Fatalf("event #%d: data is not JSON: %s\n%s", i, err, e)
		}
		if name != "" && name != v.Type {
			tb.Fatalf("event #%d: event name %q but type %q", i, name, v.Type)
		}
	}
}

func seed(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

func TestGolden(t *testing.T) {
	for _, c := range cases(t) {
		t.Run(c.name(), func(t *testing.T) {
			// The bubble's fake clock makes time.Now, read by MessagesToChat
			// for `created`, return the same instant on every run.
			synctest.Test(t, func(t *testing.T) { testCase(t, c) })
		})
	}
}

func testCase(t *testing.T, c goldenCase) {
	got, err := run(bytes.NewReader(c.input), c.dir)
	if err != nil {
		t.Fatalf("cannot transcode: %s", err)
	}
	checkFraming(t, got)
	if *update {
		if err := os.MkdirAll(filepath.Dir(c.golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c.golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(c.golden)
	if err != nil {
		t.Fatalf("cannot read the golden file (run go test ./sse/golden -update): %s", err)
	}
	compareEvents(t, c.golden, want, got)

	// The same stream arriving in small random pieces.
	rng := rand.New(rand.NewPCG(seed(c.golden), 1))
	for i := range 24 {
		maxRead := []int{1, 3, 16, 100, 600}[i%5]
		split, err := run(&randomReader{data: c.input, rng: rng, max: maxRead}, c.dir)
		if err != nil {
			t.Fatalf("split run %d (reads ≤ %d bytes): cannot transcode: %s", i, maxRead, err)
		}
		compareEvents(t, fmt.Sprintf("%s, split run %d (reads ≤ %d bytes)", c.golden, i, maxRead), want, split)
	}

	if c.dir.roundTrip {
		want, got := assembleChat(t, c.input), assembleChat(t, got)
		if !got.equal(want) {
			t.Fatalf("the round trip changed the stream:\ngot  %+v\nwant %+v", got, want)
		}
	}
}

// TestNoStaleGoldens fails for a golden file that no case produces (a
// fixture or direction removed without its transcripts).
func TestNoStaleGoldens(t *testing.T) {
	want := map[string]bool{}
	for _, c := range cases(t) {
		want[c.golden] = true
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*", "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !want[f] {
			t.Errorf("%s belongs to no case", f)
		}
	}
	if len(files) != len(want) && !*update {
		t.Errorf("got %d golden files; want %d", len(files), len(want))
	}
}

// chatResult is what a chat client assembles from a stream.
type chatResult struct {
	Content string
	Tools   []chatTool // by tool_calls index
	Finish  string
	Usage   chatUsage
}

type chatTool struct{ ID, Name, Args string }

// chatUsage holds the usage fields the Anthropic format can carry; an
// absent usage chunk counts as zeros (the messages format always reports
// usage, so a chat stream without it comes back with zeros). reasoning
// tokens are left out: ChatToMessages has nowhere to put them (its
// message_delta usage has no output_tokens_details).
type chatUsage struct {
	Prompt, Completion, Total, Cached int64
}

func (r chatResult) equal(o chatResult) bool {
	return r.Content == o.Content && slices.Equal(r.Tools, o.Tools) && r.Finish == o.Finish && r.Usage == o.Usage
}

// assembleChat reads a chat-completions stream as a client does.
func assembleChat(tb testing.TB, stream []byte) chatResult {
	tb.Helper()
	var res chatResult
	rd := sse.AcquireReader(bytes.NewReader(stream))
	defer sse.ReleaseReader(rd)
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return res
		}
		if err != nil {
			tb.Fatalf("cannot read chat stream: %s", err)
		}
		if sse.IsDone(ev.Data) {
			continue
		}
		var chunk struct {
			Choices []struct {
				Index int
				Delta struct {
					Content   *string
					ToolCalls []struct {
						Index    int
						ID       string
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				}
				FinishReason *string `json:"finish_reason"`
			}
			Usage *struct {
				PromptTokens        int64 `json:"prompt_tokens"`
				CompletionTokens    int64 `json:"completion_tokens"`
				TotalTokens         int64 `json:"total_tokens"`
				PromptTokensDetails struct {
					CachedTokens int64 `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			}
		}
		if err := json.Unmarshal(ev.Data, &chunk); err != nil {
			tb.Fatalf("chat chunk is not JSON: %s: %s", err, ev.Data)
		}
		if u := chunk.Usage; u != nil {
			res.Usage = chatUsage{u.PromptTokens, u.CompletionTokens, u.TotalTokens, u.PromptTokensDetails.CachedTokens}
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			if ch.Delta.Content != nil {
				res.Content += *ch.Delta.Content
			}
			for _, tc := range ch.Delta.ToolCalls {
				for len(res.Tools) <= tc.Index {
					res.Tools = append(res.Tools, chatTool{})
				}
				t := &res.Tools[tc.Index]
				if tc.ID != "" {
					t.ID = tc.ID
				}
				t.Name += tc.Function.Name
				t.Args += tc.Function.Arguments
			}
			if ch.FinishReason != nil && *ch.FinishReason != "" {
				res.Finish = *ch.FinishReason
			}
		}
	}
}
