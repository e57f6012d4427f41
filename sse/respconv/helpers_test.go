package respconv_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gw/sse"
	"gw/sse/respconv"
	"gw/sse/transcode"
)

// event is an owned copy of an sse.Event.
type event struct {
	Name, Data string
}

// chunkReader returns data in reads of the given sizes, cycling (nil: one piece).
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

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

// parseSSE reads every event of stream, split into reads of sizes.
func parseSSE(tb testing.TB, stream []byte, sizes []int) []event {
	tb.Helper()
	r := sse.AcquireReader(&chunkReader{data: stream, sizes: sizes})
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
		evs = append(evs, event{Name: string(ev.Name), Data: string(ev.Data)})
	}
}

// readFixture reads a fixture from sse/testdata or this package's testdata.
// .jsonl fixtures (one Responses event per line) are framed as SSE.
func readFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		b, err = os.ReadFile(filepath.Join("testdata", name))
	}
	if err != nil {
		tb.Fatalf("cannot read fixture %q: %s", name, err)
	}
	if !strings.HasSuffix(name, ".jsonl") {
		return b
	}
	var out []byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var t struct{ Type string }
		if err := json.Unmarshal(line, &t); err != nil {
			tb.Fatalf("bad jsonl line: %s", err)
		}
		out = sse.AppendEvent(out, []byte(t.Type), line)
	}
	return out
}

// includeUsage is a runStream setup for ResponsesToChat.
func includeUsage(st transcode.Stream) { st.(*respconv.ResponsesToChat).SetIncludeUsage(true) }

// runStream feeds the events of stream (read in pieces of sizes) through st
// and returns the caller's bytes; the stream ends with End unless an event
// failed.
func runStream(tb testing.TB, st transcode.Stream, model string, stream []byte, sizes []int, setup ...func(transcode.Stream)) ([]byte, error) {
	tb.Helper()
	st.Reset([]byte(model))
	for _, fn := range setup {
		fn(st)
	}
	var out []byte
	for _, ev := range parseSSE(tb, stream, sizes) {
		var err error
		out, err = st.Event(out, []byte(ev.Name), []byte(ev.Data))
		if err != nil {
			return out, err
		}
	}
	return st.End(out), nil
}

// obj decodes a JSON object, failing the test on invalid JSON.
func obj(tb testing.TB, data string) map[string]any {
	tb.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		tb.Fatalf("invalid JSON %q: %s", data, err)
	}
	if dec.More() {
		tb.Fatalf("trailing data after JSON %q", data)
	}
	return m
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func num(v any) int64 {
	n, _ := v.(json.Number)
	i, _ := n.Int64()
	return i
}

func get(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
