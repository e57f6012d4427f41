package msgconv_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"gw/sse"
	"gw/sse/msgconv"
	"gw/sse/transcode"
)

// fixedCreated is the clock every test runs with.
const fixedCreated = 1700000000

func TestMain(m *testing.M) {
	restore := msgconv.SetClock(fixedCreated)
	code := m.Run()
	restore()
	os.Exit(code)
}

// event is an owned SSE event.
type event struct {
	Name, Data string
}

// chunkReader returns data in reads of the given sizes, cycling; nil sizes
// is one read.
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (c *chunkReader) Reset(data []byte, sizes []int) { c.data, c.sizes, c.i = data, sizes, 0 }

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := len(c.data)
	if len(c.sizes) > 0 {
		n = min(n, c.sizes[c.i%len(c.sizes)])
		c.i++
	}
	n = copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// readFixture returns a fixture as an SSE stream; .jsonl fixtures (one
// event's data per line) are framed with `event: <type>` as SOURCES.md
// describes.
func readFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		tb.Fatalf("cannot read fixture: %s", err)
	}
	if !strings.HasSuffix(name, ".jsonl") {
		return b
	}
	var out []byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var v struct{ Type string }
		if err := json.Unmarshal(line, &v); err != nil {
			tb.Fatalf("bad fixture line %q: %s", line, err)
		}
		out = sse.AppendEvent(out, []byte(v.Type), line)
	}
	return out
}

// parseSSE returns the events of stream, read in pieces of the given sizes.
func parseSSE(tb testing.TB, stream []byte, sizes []int) []event {
	tb.Helper()
	var cr chunkReader
	cr.Reset(stream, sizes)
	r := sse.AcquireReader(&cr)
	defer sse.ReleaseReader(r)
	var evs []event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return evs
		}
		if err != nil {
			tb.Fatalf("cannot read SSE: %s", err)
		}
		evs = append(evs, event{string(ev.Name), string(ev.Data)})
	}
}

// runStream feeds stream (read in pieces of sizes through sse.Reader) to s
// and returns everything s wrote, End included.
func runStream(tb testing.TB, s transcode.Stream, model string, stream []byte, sizes []int) []byte {
	tb.Helper()
	s.Reset([]byte(model))
	var cr chunkReader
	cr.Reset(stream, sizes)
	r := sse.AcquireReader(&cr)
	defer sse.ReleaseReader(r)
	var out []byte
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			tb.Fatalf("cannot read SSE: %s", err)
		}
		if out, err = s.Event(out, ev.Name, ev.Data); err != nil {
			tb.Fatalf("Event(%q): %s", ev.Data, err)
		}
	}
	return s.End(out)
}

// randomSizes returns read sizes that split a stream at random points.
func randomSizes(rng *rand.Rand) []int {
	sizes := make([]int, 1+rng.IntN(16))
	for i := range sizes {
		switch rng.IntN(3) {
		case 0:
			sizes[i] = 1 + rng.IntN(3)
		case 1:
			sizes[i] = 1 + rng.IntN(64)
		default:
			sizes[i] = 1 + rng.IntN(2048)
		}
	}
	return sizes
}

// decode decodes JSON for comparisons; it fails the test on invalid JSON.
func decode(tb testing.TB, b []byte) any {
	tb.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		tb.Fatalf("invalid JSON %q: %s", b, err)
	}
	if _, err := d.Token(); err != io.EOF {
		tb.Fatalf("trailing data after JSON %q", b)
	}
	return v
}

// sameJSON fails unless got and want hold the same JSON value (member
// order and spelling aside).
func sameJSON(tb testing.TB, got []byte, want string) {
	tb.Helper()
	g, w := decode(tb, got), decode(tb, []byte(want))
	if !reflect.DeepEqual(g, w) {
		tb.Fatalf("got\n  %s\nwant\n  %s", got, want)
	}
}

// chatResult is what a chat client assembles from a stream.
type chatResult struct {
	Role       string
	Content    string
	Reasoning  string
	Tools      []chatTool // by index
	Blocks     []string   // thinking_blocks: "thinking:<text>:<signature>" or "redacted:<data>"
	Finish     string
	Usage      map[string]any
	Error      map[string]any
	Done       bool
	Frames     int
	AfterUsage int // content frames after the usage chunk
}

type chatTool struct {
	ID, Name, Args string
}

// assembleChat parses a chat completions stream as a client does and checks
// its framing: every data is JSON or [DONE], nothing follows [DONE] or an
// error, every chunk carries the same id, created and model.
func assembleChat(tb testing.TB, stream []byte) chatResult {
	tb.Helper()
	var res chatResult
	var id, model string
	var created json.Number
	usageSeen := false
	for _, ev := range parseSSE(tb, stream, nil) {
		res.Frames++
		if ev.Name != "" {
			tb.Fatalf("chat frame with an event name %q", ev.Name)
		}
		if res.Done || res.Error != nil {
			tb.Fatalf("frame after the end: %s", ev.Data)
		}
		if ev.Data == "[DONE]" {
			res.Done = true
			continue
		}
		var c struct {
			ID      string
			Object  string
			Created json.Number
			Model   string
			Choices []struct {
				Index int
				Delta struct {
					Role             *string
					Content          *string
					ReasoningContent *string `json:"reasoning_content"`
					ThinkingBlocks   []struct {
						Type, Thinking, Signature, Data string
					} `json:"thinking_blocks"`
					ToolCalls []struct {
						Index    *int
						ID       string
						Type     string
						Function struct {
							Name      string
							Arguments *string
						}
					} `json:"tool_calls"`
				}
				FinishReason *string `json:"finish_reason"`
			}
			Usage map[string]any
			Error map[string]any
		}
		d := json.NewDecoder(strings.NewReader(ev.Data))
		d.DisallowUnknownFields()
		if err := d.Decode(&c); err != nil {
			tb.Fatalf("bad chunk %s: %s", ev.Data, err)
		}
		if c.Error != nil {
			res.Error = c.Error
			continue
		}
		if c.Object != "chat.completion.chunk" {
			tb.Fatalf("object %q in %s", c.Object, ev.Data)
		}
		if id == "" {
			id, model, created = c.ID, c.Model, c.Created
		}
		if c.ID != id || c.Model != model || c.Created != created {
			tb.Fatalf("chunk id/model/created changed: %s", ev.Data)
		}
		if c.Usage != nil {
			if len(c.Choices) != 0 {
				tb.Fatalf("usage chunk with choices: %s", ev.Data)
			}
			res.Usage = c.Usage
			usageSeen = true
			continue
		}
		if usageSeen {
			res.AfterUsage++
		}
		for _, ch := range c.Choices {
			if ch.Index != 0 {
				tb.Fatalf("choice index %d", ch.Index)
			}
			dl := ch.Delta
			if dl.Role != nil {
				res.Role = *dl.Role
			}
			if dl.Content != nil {
				res.Content += *dl.Content
			}
			if dl.ReasoningContent != nil {
				res.Reasoning += *dl.ReasoningContent
			}
			for _, b := range dl.ThinkingBlocks {
				switch b.Type {
				case "thinking":
					res.Blocks = append(res.Blocks, "thinking:"+b.Thinking+":"+b.Signature)
				case "redacted_thinking":
					res.Blocks = append(res.Blocks, "redacted:"+b.Data)
				default:
					tb.Fatalf("thinking block type %q: %s", b.Type, ev.Data)
				}
			}
			for _, tc := range dl.ToolCalls {
				if tc.Index == nil {
					tb.Fatalf("tool call without index: %s", ev.Data)
				}
				k := *tc.Index
				for len(res.Tools) <= k {
					res.Tools = append(res.Tools, chatTool{})
				}
				if tc.ID != "" {
					if res.Tools[k].ID != "" || tc.Type != "function" {
						tb.Fatalf("bad tool start: %s", ev.Data)
					}
					res.Tools[k].ID, res.Tools[k].Name = tc.ID, tc.Function.Name
				}
				if tc.Function.Arguments != nil {
					res.Tools[k].Args += *tc.Function.Arguments
				}
			}
			if ch.FinishReason != nil {
				if res.Finish != "" {
					tb.Fatalf("second finish_reason: %s", ev.Data)
				}
				res.Finish = *ch.FinishReason
			}
		}
	}
	return res
}

// msgResult is what an Anthropic client assembles from a stream.
type msgResult struct {
	ID, Model  string
	Blocks     []msgBlock
	Stop       string
	Usage      map[string]any // of message_delta
	StartUsage map[string]any // of message_start
	Error      map[string]any
	Stopped    bool // message_stop seen
}

type msgBlock struct {
	Type               string
	Text, Thinking     string
	ID, Name, JSONText string
}

// assembleMessages parses an Anthropic messages stream and checks its
// grammar: message_start first, blocks opened at 0,1,2… one at a time,
// deltas on the open block only, message_delta then message_stop last.
func assembleMessages(tb testing.TB, stream []byte) msgResult {
	tb.Helper()
	var res msgResult
	started, deltaSeen := false, false
	open := -1
	for _, ev := range parseSSE(tb, stream, nil) {
		if res.Stopped || res.Error != nil {
			tb.Fatalf("event after the end: %s %s", ev.Name, ev.Data)
		}
		var e struct {
			Type    string
			Index   *int
			Message *struct {
				ID, Type, Role, Model string
				Content               []any
				Usage                 map[string]any
			}
			ContentBlock *struct {
				Type, Text, Thinking, ID, Name string
				Input                          map[string]any
			} `json:"content_block"`
			Delta map[string]any
			Usage map[string]any
			Error map[string]any
		}
		if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
			tb.Fatalf("bad event %s: %s", ev.Data, err)
		}
		if e.Type != ev.Name {
			tb.Fatalf("event name %q, type %q", ev.Name, e.Type)
		}
		if e.Type == "error" {
			res.Error = e.Error
			continue
		}
		if !started && e.Type != "message_start" && e.Type != "ping" {
			tb.Fatalf("%s before message_start", e.Type)
		}
		switch e.Type {
		case "message_start":
			if started {
				tb.Fatalf("second message_start")
			}
			started = true
			res.ID, res.Model, res.StartUsage = e.Message.ID, e.Message.Model, e.Message.Usage
		case "content_block_start":
			if open >= 0 || deltaSeen || e.Index == nil || *e.Index != len(res.Blocks) {
				tb.Fatalf("bad content_block_start: %s", ev.Data)
			}
			open = *e.Index
			cb := e.ContentBlock
			res.Blocks = append(res.Blocks, msgBlock{Type: cb.Type, ID: cb.ID, Name: cb.Name})
		case "content_block_delta":
			if e.Index == nil || *e.Index != open {
				tb.Fatalf("delta not on the open block: %s", ev.Data)
			}
			b := &res.Blocks[open]
			switch e.Delta["type"] {
			case "text_delta":
				b.Text += e.Delta["text"].(string)
			case "thinking_delta":
				b.Thinking += e.Delta["thinking"].(string)
			case "input_json_delta":
				b.JSONText += e.Delta["partial_json"].(string)
			case "signature_delta":
			default:
				tb.Fatalf("unexpected delta %s", ev.Data)
			}
		case "content_block_stop":
			if e.Index == nil || *e.Index != open {
				tb.Fatalf("stop not on the open block: %s", ev.Data)
			}
			open = -1
		case "message_delta":
			if open >= 0 || deltaSeen {
				tb.Fatalf("message_delta with a block open or twice")
			}
			deltaSeen = true
			res.Stop, _ = e.Delta["stop_reason"].(string)
			res.Usage = e.Usage
		case "message_stop":
			if !deltaSeen {
				tb.Fatalf("message_stop before message_delta")
			}
			res.Stopped = true
		case "ping":
		default:
			tb.Fatalf("unexpected event %s", ev.Name)
		}
	}
	return res
}

// sameArgs fails unless two tool-argument texts hold the same JSON value,
// "" counting as {}.
func sameArgs(tb testing.TB, got, want string) {
	tb.Helper()
	if strings.TrimSpace(got) == "" {
		got = "{}"
	}
	if strings.TrimSpace(want) == "" {
		want = "{}"
	}
	sameJSON(tb, []byte(got), want)
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatalf("cannot marshal: %s", err)
	}
	return b
}

func validJSON(s string) bool { return json.Valid([]byte(s)) }
