package golden_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"testing/synctest"

	"gw/sse/converse"
	"gw/sse/transcode"
)

// The Bedrock ConverseStream fixture is binary (AWS event-stream framing):
// converse.Source decodes it and converse.ToChatStream turns its events
// into chat chunks, then the chat → Messages and chat → Responses
// transcoders give the other caller formats, as edge/upproto_bedrock.go
// wires them. Golden files live one level deeper than the SSE ones
// (testdata/bedrock/<direction>/), so TestNoStaleGoldens leaves them alone.
// Converse streams carry no id: the generated chatcmpl-gw<hex> (and what
// the Responses transcoder derives from it) is normalized to gwID.
var bedrockFixtures = []string{"bedrock_converse_stream_text_then_tool_use.eventstream"}

func converseToChat() (transcode.Stream, func()) {
	s := converse.AcquireToChatStream([]byte(alias))
	return s, func() { converse.ReleaseToChatStream(s) }
}

var bedrockDirections = []direction{
	{name: "converse_to_chat", stages: []stage{converseToChat}},
	{name: "converse_to_messages", stages: []stage{converseToChat, chatToMessages}},
	{name: "converse_to_responses", stages: []stage{converseToChat, chatToResponses}},
}

var generatedID = regexp.MustCompile(`gw[0-9a-f]{8,}`)

// runConverse is run with the event-stream decoder in front.
func runConverse(src io.Reader, d direction) ([]byte, error) {
	p := &pipeline{}
	for _, mk := range d.stages {
		s, release := mk()
		defer release()
		p.streams = append(p.streams, s)
		p.bufs = append(p.bufs, nil)
	}
	rd := converse.AcquireSource(src)
	defer converse.ReleaseSource(rd)
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
	return generatedID.ReplaceAll(p.out, []byte("gwID")), nil
}

func TestGoldenBedrock(t *testing.T) {
	for _, d := range bedrockDirections {
		for _, f := range bedrockFixtures {
			in, err := os.ReadFile(filepath.Join("testdata", "in", f))
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "bedrock", d.name, f+".golden")
			t.Run(d.name+"/"+f, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { bedrockCase(t, d, in, golden) })
			})
		}
	}
}

func bedrockCase(t *testing.T, d direction, in []byte, golden string) {
	got, err := runConverse(bytes.NewReader(in), d)
	if err != nil {
		t.Fatalf("cannot transcode: %s", err)
	}
	checkFraming(t, got)
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("cannot read the golden file (run go test ./sse/golden -update): %s", err)
	}
	compareEvents(t, golden, want, got)
	rng := rand.New(rand.NewPCG(seed(golden), 1))
	for i := range 40 {
		maxRead := []int{1, 3, 16, 100, 600}[i%5]
		split, err := runConverse(&randomReader{data: in, rng: rng, max: maxRead}, d)
		if err != nil {
			t.Fatalf("split run %d (reads ≤ %d bytes): %s", i, maxRead, err)
		}
		compareEvents(t, fmt.Sprintf("%s, split run %d (reads ≤ %d bytes)", golden, i, maxRead), want, split)
	}
	if d.name == "converse_to_chat" {
		res := assembleChat(t, got)
		want := chatResult{
			Content: "<thinking> To find the temperature of the capital of France, I need to first determine the capital of France and then get the current temperature in that city. The capital of France is Paris. I will use the \"get_temperature\" tool to find the current temperature in Paris.</thinking>\n",
			Tools:   []chatTool{{ID: "tooluse_lAG_zP8QRHmSYOwZzzaCqA", Name: "get_temperature", Args: `{"city":"Paris"}`}},
			Finish:  "tool_calls",
			Usage:   chatUsage{Prompt: 471, Completion: 91, Total: 562},
		}
		if !res.equal(want) {
			t.Fatalf("assembled:\ngot  %+v\nwant %+v", res, want)
		}
	}
}
