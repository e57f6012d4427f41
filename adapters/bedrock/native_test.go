package bedrock

import (
	"bytes"
	"encoding/base64"
	"errors"
	"flag"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/headers"
	"gw/sse"
	"gw/sse/eventstream"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func TestBuildNative(t *testing.T) {
	a := newAdapter(t, "http://mock.local/pre", headers.Config{})
	const claude = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"
	if a.NativeBase(adapters.SurfaceMessages) == "" || a.NativeBase(adapters.SurfaceResponses) != "" || a.NativeBase(adapters.SurfaceCountTokens) != "" {
		t.Fatal("NativeBase: Messages only")
	}
	if !a.NativeModel(adapters.SurfaceMessages, claude) || a.NativeModel(adapters.SurfaceMessages, "us.amazon.nova-micro-v1:0") {
		t.Fatal("NativeModel: Claude models only")
	}
	body := `{"model":"claude","stream":true,"max_tokens":64,"system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}}],` +
		`"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"sig"}]},{"role":"user","content":"hi"}],"thinking":{"type":"enabled","budget_tokens":1024}}`
	var client fasthttp.RequestHeader
	client.Set("anthropic-beta", "interleaved-thinking-2025-05-14, token-efficient-tools-2025-02-19")
	for _, tc := range []struct {
		stream         bool
		path, accept   string
		beta, wantBeta string
	}{
		{true, "/pre/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/invoke-with-response-stream", "application/vnd.amazon.eventstream",
			"x", `"anthropic_beta":["interleaved-thinking-2025-05-14","token-efficient-tools-2025-02-19"]`},
		{false, "/pre/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/invoke", "application/json", "", ""},
	} {
		req := fasthttp.AcquireRequest()
		in := &adapters.ChatInput{Body: []byte(body), UpstreamModel: claude, Stream: tc.stream}
		if tc.beta != "" {
			in.ClientHeaders = &client
		}
		if err := a.BuildNative(req, in, adapters.SurfaceMessages); err != nil {
			t.Fatal(err)
		}
		got := string(req.Body())
		if string(req.RequestURI()) != tc.path || string(req.Header.Peek("Accept")) != tc.accept ||
			!strings.HasPrefix(string(req.Header.Peek("Authorization")), "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") {
			t.Fatalf("request %s %s", req.RequestURI(), req.Header.Header())
		}
		if strings.Contains(got, `"model"`) || strings.Contains(got, `"stream"`) || !strings.Contains(got, `"anthropic_version":"bedrock-2023-05-31"`) ||
			!strings.Contains(got, `"cache_control":{"type":"ephemeral"}`) || !strings.Contains(got, `"signature":"sig"`) ||
			!strings.Contains(got, `"thinking":{"type":"enabled","budget_tokens":1024}`) || !strings.Contains(got, tc.wantBeta) ||
			(tc.wantBeta == "" && strings.Contains(got, "anthropic_beta")) {
			t.Fatalf("body %s", got)
		}
		fasthttp.ReleaseRequest(req)
	}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	if err := a.BuildNative(req, &adapters.ChatInput{Body: []byte(body), UpstreamModel: "us.amazon.nova-micro-v1:0"}, adapters.SurfaceMessages); !errors.Is(err, adapters.ErrUnsupported) {
		t.Fatalf("nova: %v", err)
	}
	if err := a.BuildNative(req, &adapters.ChatInput{Body: []byte(`[1]`), UpstreamModel: claude}, adapters.SurfaceMessages); !errors.Is(err, adapters.ErrBody) {
		t.Fatalf("not an object: %v", err)
	}
}

// chunkFrames wraps each event of an Anthropic SSE stream in an
// InvokeModelWithResponseStream chunk frame, as Bedrock sends them.
func chunkFrames(tb testing.TB, stream []byte) ([]byte, []sse.Event) {
	tb.Helper()
	r := sse.AcquireReader(bytes.NewReader(stream))
	defer sse.ReleaseReader(r)
	var out []byte
	var evs []sse.Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return out, evs
		}
		if err != nil {
			tb.Fatal(err)
		}
		evs = append(evs, sse.Event{Name: append([]byte(nil), ev.Name...), Data: append([]byte(nil), ev.Data...)})
		payload := `{"bytes":"` + base64.StdEncoding.EncodeToString(ev.Data) + `","p":"abcdefghijklmnop"}`
		out = eventstream.AppendMessage(out, []eventstream.Header{
			{Name: ":event-type", Value: "chunk"}, {Name: ":content-type", Value: "application/json"}, {Name: ":message-type", Value: "event"},
		}, []byte(payload))
	}
}

func exceptionFrame(typ, payload string) []byte {
	return eventstream.AppendMessage(nil, []eventstream.Header{
		{Name: ":exception-type", Value: typ}, {Name: ":content-type", Value: "application/json"}, {Name: ":message-type", Value: "exception"},
	}, []byte(payload))
}

// splitReader returns its data in the given piece sizes.
type splitReader struct {
	data  []byte
	sizes []int
	i     int
}

func (r *splitReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(r.data), r.sizes[r.i%len(r.sizes)])
	r.i++
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// readAll renders every event of src as SSE, the error that ended it
// (nil at io.EOF) and the last ErrStatus.
func readAll(src io.Reader) ([]byte, error, int) {
	s := AcquireInvokeSource(src)
	defer ReleaseInvokeSource(s)
	var out []byte
	for {
		ev, err := s.Next()
		if err == io.EOF {
			return out, nil, s.ErrStatus()
		}
		if err != nil {
			return out, err, s.ErrStatus()
		}
		out = sse.AppendEvent(out, ev.Name, ev.Data)
	}
}

// TestInvokeSourceGolden: the recorded Anthropic streams wrapped in chunk
// frames come out event for event as Anthropic sent them (names from each
// event's type, data byte for byte), whatever the read split points; an
// exception ends a stream as a Messages error event with its status.
func TestInvokeSourceGolden(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 1))
	for _, name := range []string{"anthropic_thinking_then_text.sse", "anthropic_text_then_parallel_tool_use.sse"} {
		fx, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		frames, evs := chunkFrames(t, fx)
		for _, tail := range []string{"", "throttlingException", "modelStreamErrorException"} {
			in := frames
			if tail != "" {
				in = append(append([]byte(nil), frames...), exceptionFrame(tail, `{"message":"Too many requests, please wait."}`)...)
			}
			want, _, _ := readAll(bytes.NewReader(in))
			suffix := ".invoke.golden"
			if tail != "" {
				suffix = "." + tail + suffix
			}
			golden := filepath.Join("testdata", strings.TrimSuffix(name, ".sse")+suffix)
			if *update {
				if err := os.WriteFile(golden, want, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			g, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("cannot read the golden file (run with -update): %v", err)
			}
			if !bytes.Equal(g, want) {
				t.Fatalf("%s: output differs from %s:\n%s", name, golden, want)
			}
			// Every chunk is the recorded event, unchanged.
			var exp []byte
			for _, ev := range evs {
				exp = sse.AppendEvent(exp, typeOf(t, ev.Data), ev.Data)
			}
			if !bytes.HasPrefix(want, exp) {
				t.Fatalf("%s: the events differ from the recording:\n%s", name, want)
			}
			for range 30 {
				sizes := make([]int, 1+rng.IntN(8))
				for i := range sizes {
					sizes[i] = 1 + rng.IntN(64)
				}
				got, err, status := readAll(&splitReader{data: in, sizes: sizes})
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%s split %v: %v\n%s", name, sizes, err, got)
				}
				wantStatus := map[string]int{"": 0, "throttlingException": 429, "modelStreamErrorException": 502}[tail]
				if status != wantStatus {
					t.Fatalf("%s %s: status %d; want %d", name, tail, status, wantStatus)
				}
			}
		}
	}
}

func typeOf(t *testing.T, data []byte) []byte {
	t.Helper()
	i := bytes.Index(data, []byte(`"type":`))
	if i < 0 {
		t.Fatalf("no type in %s", data)
	}
	rest := bytes.TrimLeft(data[i+7:], " ")
	j := bytes.IndexByte(rest[1:], '"')
	return rest[1 : 1+j]
}

func TestInvokeSourceMalformed(t *testing.T) {
	frame := func(typ, payload string) []byte {
		return eventstream.AppendMessage(nil, []eventstream.Header{{Name: ":event-type", Value: typ}, {Name: ":message-type", Value: "event"}}, []byte(payload))
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"not json", frame("chunk", `nope`), ErrMalformedChunk},
		{"no bytes", frame("chunk", `{"p":"x"}`), ErrMalformedChunk},
		{"bad base64", frame("chunk", `{"bytes":"!!!"}`), ErrMalformedChunk},
		{"no type", frame("chunk", `{"bytes":"`+base64.StdEncoding.EncodeToString([]byte(`{"x":1}`))+`"}`), ErrMalformedChunk},
		{"unknown event skipped", frame("other", `{}`), nil},
		{"truncated", frame("chunk", `{"bytes":""}`)[:20], eventstream.ErrTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err, _ := readAll(bytes.NewReader(tc.in))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v; want %v", err, tc.want)
			}
		})
	}
	// An unmodeled error message.
	in := eventstream.AppendMessage(nil, []eventstream.Header{{Name: ":message-type", Value: "error"},
		{Name: ":error-code", Value: "InternalFailure"}, {Name: ":error-message", Value: `say "no"`}}, nil)
	out, err, status := readAll(bytes.NewReader(in))
	if err != nil || status != 502 || string(out) != "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"say \\\"no\\\"\"}}\n\n" {
		t.Fatalf("error message: %v %d %q", err, status, out)
	}
}
