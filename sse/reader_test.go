package sse_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gw/sse"
)

// testEvent is an owned copy of an sse.Event.
type testEvent struct {
	Name, Data, ID, Raw string
	Retry               int
	Unterminated        bool
}

func (e testEvent) String() string {
	return fmt.Sprintf("{name=%q data=%q id=%q retry=%d unterminated=%v raw=%q}",
		e.Name, e.Data, e.ID, e.Retry, e.Unterminated, e.Raw)
}

func copyEvent(ev sse.Event) testEvent {
	return testEvent{
		Name:         string(ev.Name),
		Data:         string(ev.Data),
		ID:           string(ev.ID),
		Raw:          string(ev.Raw),
		Retry:        ev.Retry,
		Unterminated: ev.Unterminated,
	}
}

// chunkReader returns data in chunks of the given sizes, cycling through
// them; a size of 0 means a (0, nil) read.
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (c *chunkReader) Reset(data []byte, sizes []int) {
	c.data, c.sizes, c.i = data, sizes, 0
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

// readAll parses src to the end and returns the events and the final error
// (nil for a clean io.EOF).
func readAll(r *sse.Reader, src io.Reader) ([]testEvent, error) {
	r.Reset(src)
	var evs []testEvent
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, copyEvent(ev))
	}
}

// refParse is a deliberately simple reference parser over the whole input.
func refParse(in []byte) []testEvent {
	var evs []testEvent
	var (
		name, id   string
		data       []string
		retry      = -1
		blockStart = 0
	)
	dispatch := func(raw []byte, unterminated bool) {
		if len(data) > 0 || name != "" {
			evs = append(evs, testEvent{
				Name: name, Data: strings.Join(data, "\n"), ID: id, Retry: retry,
				Raw: string(raw), Unterminated: unterminated,
			})
		}
		name, id, data, retry = "", "", nil, -1
	}
	process := func(line string) {
		if strings.HasPrefix(line, ":") {
			return
		}
		field, value, ok := strings.Cut(line, ":")
		if ok {
			value = strings.TrimPrefix(value, " ")
		}
		switch field {
		case "data":
			data = append(data, value)
		case "event":
			name = value
		case "id":
			if !strings.Contains(value, "\x00") {
				id = value
			}
		case "retry":
			if value != "" && strings.Trim(value, "0123456789") == "" {
				retry = 0
				for _, c := range value {
					retry = min(retry*10+int(c-'0'), 1<<31-1)
				}
			}
		}
	}
	i := 0
	for i < len(in) {
		j := i
		for j < len(in) && in[j] != '\r' && in[j] != '\n' {
			j++
		}
		if j == len(in) {
			process(string(in[i:j]))
			i = j
			break
		}
		next := j + 1
		if in[j] == '\r' && next < len(in) && in[next] == '\n' {
			next++
		}
		if j == i {
			dispatch(in[blockStart:next], false)
			blockStart = next
		} else {
			process(string(in[i:j]))
		}
		i = next
	}
	if blockStart < len(in) {
		dispatch(in[blockStart:], true)
	}
	return evs
}

// sameEvents compares got with want. Raw may lack the final LF of a CRLF
// blank line when the CR was the last byte of a read (see Event.Raw).
func sameEvents(got, want []testEvent) error {
	if len(got) != len(want) {
		return fmt.Errorf("got %d events; want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Raw != w.Raw && !(strings.HasSuffix(w.Raw, "\r\n") && g.Raw == w.Raw[:len(w.Raw)-1]) {
			return fmt.Errorf("event #%d: got raw %q; want %q", i, g.Raw, w.Raw)
		}
		g.Raw = w.Raw
		if g != w {
			return fmt.Errorf("event #%d:\ngot  %s\nwant %s", i, g, w)
		}
	}
	return nil
}

func loadFixtures(t testing.TB) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob("testdata/*.sse")
	if err != nil {
		t.Fatalf("cannot list fixtures: %s", err)
	}
	if len(paths) == 0 {
		t.Fatalf("no fixtures in testdata")
	}
	m := make(map[string][]byte, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("cannot read fixture: %s", err)
		}
		m[filepath.Base(p)] = b
	}
	return m
}

// checkSplits parses in whole, at every single split point, in 1-byte reads
// and in random multi-split reads, and compares each result with want.
func checkSplits(t *testing.T, in []byte, want []testEvent) {
	t.Helper()
	var r sse.Reader
	var cr chunkReader
	check := func(what string, sizes []int) {
		t.Helper()
		cr.Reset(in, sizes)
		got, err := readAll(&r, &cr)
		if err != nil {
			t.Fatalf("%s: unexpected error: %s", what, err)
		}
		if err := sameEvents(got, want); err != nil {
			t.Fatalf("%s: %s", what, err)
		}
	}
	check("whole", nil)
	check("1-byte reads", []int{1})
	check("1-byte reads with empty reads", []int{1, 0})
	for k := 1; k < len(in); k++ {
		check(fmt.Sprintf("split at %d", k), []int{k, len(in)})
	}
	rng := rand.New(rand.NewPCG(1, uint64(len(in))))
	for n := range 50 {
		sizes := make([]int, 1+rng.IntN(20))
		for i := range sizes {
			sizes[i] = 1 + rng.IntN(1+rng.IntN(600))
		}
		check(fmt.Sprintf("random splits #%d %v", n, sizes), sizes)
	}
}

func TestReaderFixtures(t *testing.T) {
	for name, in := range loadFixtures(t) {
		t.Run(name, func(t *testing.T) {
			want := refParse(in)
			if len(want) == 0 {
				t.Fatalf("reference parser found no events")
			}
			checkSplits(t, in, want)
		})
	}
}

func TestReaderFixtureDetails(t *testing.T) {
	fx := loadFixtures(t)
	var r sse.Reader

	f := func(file string, wantCount int, check func(evs []testEvent)) {
		t.Helper()
		evs, err := readAll(&r, bytes.NewReader(fx[file]))
		if err != nil {
			t.Fatalf("%s: unexpected error: %s", file, err)
		}
		if len(evs) != wantCount {
			t.Fatalf("%s: got %d events; want %d", file, len(evs), wantCount)
		}
		var raw strings.Builder
		for _, ev := range evs {
			raw.WriteString(ev.Raw)
		}
		if raw.String() != string(fx[file]) {
			t.Fatalf("%s: concatenated Raw differs from the input", file)
		}
		check(evs)
	}

	f("openai_chat_text.sse", 51, func(evs []testEvent) {
		for i, ev := range evs {
			if ev.Name != "" {
				t.Fatalf("event #%d: got name %q; want none", i, ev.Name)
			}
			if done := sse.IsDone([]byte(ev.Data)); done != (i == len(evs)-1) {
				t.Fatalf("event #%d: IsDone = %v", i, done)
			}
		}
		if !strings.HasPrefix(evs[0].Data, `{"id":"chatcmpl-`) || evs[0].Unterminated {
			t.Fatalf("unexpected first event %s", evs[0])
		}
	})

	f("anthropic_text.sse", 7, func(evs []testEvent) {
		want := []string{"message_start", "content_block_start", "ping", "content_block_delta",
			"content_block_stop", "message_delta", "message_stop"}
		for i, ev := range evs {
			if ev.Name != want[i] {
				t.Fatalf("event #%d: got name %q; want %q", i, ev.Name, want[i])
			}
			if !strings.HasPrefix(ev.Data, `{"type":"`+want[i]+`"`) && ev.Name != "ping" {
				t.Fatalf("event #%d: data %q does not match name %q", i, ev.Data, ev.Name)
			}
		}
	})

	f("gemini_stream_text.sse", 3, func(evs []testEvent) {
		for i, ev := range evs {
			if !strings.HasSuffix(ev.Raw, "}\r\n\r\n") || ev.Unterminated {
				t.Fatalf("event #%d: got raw ending %q; want CRLF blank line", i, ev.Raw[len(ev.Raw)-8:])
			}
			if strings.ContainsAny(ev.Data, "\r\n") || !strings.HasPrefix(ev.Data, `{"candidates"`) {
				t.Fatalf("event #%d: bad data %q", i, ev.Data)
			}
		}
	})
	f("gemini_stream_function_call.sse", 2, func([]testEvent) {})

	// Azure's recording ends with "data: [DONE]\n" and no blank line.
	f("azure_openai_chat_text_content_filter.sse", 7, func(evs []testEvent) {
		last := evs[len(evs)-1]
		if last.Data != "[DONE]" || !last.Unterminated || last.Raw != "data: [DONE]\n" {
			t.Fatalf("unexpected last event %s", last)
		}
		for _, ev := range evs[:len(evs)-1] {
			if ev.Unterminated {
				t.Fatalf("unexpected unterminated event %s", ev)
			}
		}
	})
}

func TestReaderEdgeCases(t *testing.T) {
	f := func(in string, want ...testEvent) {
		t.Helper()
		// Validate the reference parser against the expectation, then the
		// Reader against it under every split.
		if err := sameEvents(refParse([]byte(in)), want); err != nil {
			t.Fatalf("reference parser on %q: %s", in, err)
		}
		checkSplits(t, []byte(in), want)
	}
	ev := func(name, data, raw string) testEvent {
		return testEvent{Name: name, Data: data, Raw: raw, Retry: -1}
	}

	// Empty input and inputs without events.
	f("")
	f("\n\n\r\n\r\r")
	f(": keep-alive\n\n")
	f(":\r\n\r\n: a\n: b\n\n")
	f("id: 7\n\n")
	f("retry: 100\n\n")
	f("event:\n\n")
	f("foo: bar\n\n")

	// LF, CRLF, CR-only and mixed terminators.
	f("data: a\n\n", ev("", "a", "data: a\n\n"))
	f("data: a\r\n\r\n", ev("", "a", "data: a\r\n\r\n"))
	f("data: a\r\rdata: b\r\r", ev("", "a", "data: a\r\r"), ev("", "b", "data: b\r\r"))
	f("data: a\r\n\rdata: b\n\r\n", ev("", "a", "data: a\r\n\r"), ev("", "b", "data: b\n\r\n"))
	f("data: a\r\r\ndata: b\r\n\r\n", ev("", "a", "data: a\r\r\n"), ev("", "b", "data: b\r\n\r\n"))

	// Leading blank lines and comment blocks are not part of Raw;
	// comments inside a block are.
	f("\n\r\n: ping\n\ndata: x\n\n", ev("", "x", "data: x\n\n"))
	f(": c\ndata: x\n: d\n\n", ev("", "x", ": c\ndata: x\n: d\n\n"))

	// Field parsing.
	f("data:x\n\n", ev("", "x", "data:x\n\n"))
	f("data:  x \n\n", ev("", " x ", "data:  x \n\n"))
	f("data\n\n", ev("", "", "data\n\n"))
	f("data:\n\n", ev("", "", "data:\n\n"))
	f("data\ndata\n\n", ev("", "\n", "data\ndata\n\n"))
	f("data: a:b: c\n\n", ev("", "a:b: c", "data: a:b: c\n\n"))
	f("Data: x\ndata : y\nevent: n\n\n", ev("n", "", "Data: x\ndata : y\nevent: n\n\n"))
	f("event: a\nevent: b\ndata: x\n\n", ev("b", "x", "event: a\nevent: b\ndata: x\n\n"))
	f("event: a\nevent:\ndata: x\n\n", ev("", "x", "event: a\nevent:\ndata: x\n\n"))

	// Multi-line data.
	f("data: a\ndata: b\ndata: c\n\n", ev("", "a\nb\nc", "data: a\ndata: b\ndata: c\n\n"))
	f("data: a\r\ndata:\r\ndata: c\r\n\r\n", ev("", "a\n\nc", "data: a\r\ndata:\r\ndata: c\r\n\r\n"))
	f("data: 1\ndata: 2\n\ndata: 3\n\n", ev("", "1\n2", "data: 1\ndata: 2\n\n"), ev("", "3", "data: 3\n\n"))

	// event: with no data is returned.
	f("event: ping\n\n", ev("ping", "", "event: ping\n\n"))

	// id and retry.
	f("id: 1\ndata: x\nretry: 15\nretry: x\n\n",
		testEvent{Data: "x", ID: "1", Retry: 15, Raw: "id: 1\ndata: x\nretry: 15\nretry: x\n\n"})
	f("id: 1\nid: a\x00b\ndata: x\n\n",
		testEvent{Data: "x", ID: "1", Retry: -1, Raw: "id: 1\nid: a\x00b\ndata: x\n\n"})
	f("retry: 99999999999999999999\ndata: x\n\n",
		testEvent{Data: "x", Retry: 1<<31 - 1, Raw: "retry: 99999999999999999999\ndata: x\n\n"})
	f("data: x\nid: 2\n\ndata: y\n\n",
		testEvent{Data: "x", ID: "2", Retry: -1, Raw: "data: x\nid: 2\n\n"}, ev("", "y", "data: y\n\n"))

	// No trailing blank line at EOF.
	un := func(name, data, raw string) testEvent {
		e := ev(name, data, raw)
		e.Unterminated = true
		return e
	}
	f("data: a\n\ndata: b", ev("", "a", "data: a\n\n"), un("", "b", "data: b"))
	f("data: a\n\ndata: b\n", ev("", "a", "data: a\n\n"), un("", "b", "data: b\n"))
	f("data: b\r", un("", "b", "data: b\r"))
	f("data: b\r\n", un("", "b", "data: b\r\n"))
	f("event: e\ndata: b\ndata: c", un("e", "b\nc", "event: e\ndata: b\ndata: c"))
	f("data: a\n\n: trailing comment", ev("", "a", "data: a\n\n"))
	f("data: a\n\nevent:", ev("", "a", "data: a\n\n"))
}

func TestReaderCRLFSplitAcrossReads(t *testing.T) {
	var r sse.Reader
	var cr chunkReader
	in := []byte("data: a\r\n\r\ndata: b\r\n\r\n")
	// The first event's blank-line CR is the last byte of the first read:
	// the event comes back at once, and the LF is swallowed.
	cr.Reset(in, []int{len("data: a\r\n\r"), 100})
	r.Reset(&cr)
	ev, err := r.Next()
	if err != nil {
		t.Fatalf("unexpected error: %s", err)
	}
	if string(ev.Data) != "a" || string(ev.Raw) != "data: a\r\n\r" {
		t.Fatalf("unexpected event %s", copyEvent(ev))
	}
	if cr.i != 1 {
		t.Fatalf("Next read %d chunks; want 1 (it must not wait for the LF)", cr.i)
	}
	ev, err = r.Next()
	if err != nil {
		t.Fatalf("unexpected error: %s", err)
	}
	if string(ev.Data) != "b" || string(ev.Raw) != "data: b\r\n\r\n" {
		t.Fatalf("unexpected event %s", copyEvent(ev))
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("got error %v; want io.EOF", err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("got error %v after EOF; want io.EOF again", err)
	}
}

func TestReaderComments(t *testing.T) {
	var r sse.Reader
	evs, err := readAll(&r, strings.NewReader(": a\n\n:b\ndata: x\n: c\n\n:\n\n"))
	if err != nil || len(evs) != 1 {
		t.Fatalf("got %d events, error %v; want 1 event", len(evs), err)
	}
	if n := r.Comments(); n != 4 {
		t.Fatalf("got %d comments; want 4", n)
	}
	r.Reset(strings.NewReader(""))
	if n := r.Comments(); n != 0 {
		t.Fatalf("got %d comments after Reset; want 0", n)
	}
}

func TestReaderEventTooLarge(t *testing.T) {
	f := func(maxSize int, in string, wantEvents int, wantErr error) {
		t.Helper()
		for _, sizes := range [][]int{nil, {1}, {3, 7}, {len(in) / 2, len(in)}} {
			var r sse.Reader
			r.MaxEventSize = maxSize
			var cr chunkReader
			cr.Reset([]byte(in), sizes)
			evs, err := readAll(&r, &cr)
			if len(evs) != wantEvents || err != wantErr {
				t.Fatalf("max %d, reads %v, input %q: got %d events, error %v; want %d events, error %v",
					maxSize, sizes, in, len(evs), err, wantEvents, wantErr)
			}
			if err != nil {
				if _, err2 := r.Next(); err2 != err {
					t.Fatalf("error is not sticky: got %v; want %v", err2, err)
				}
			}
		}
	}
	// "data: 0123\n\n" is 12 bytes.
	f(12, "data: 0123\n\n", 1, nil)
	f(11, "data: 0123\n\n", 0, sse.ErrEventTooLarge)
	f(12, "data: 0123\n\ndata: 01234\n\ndata: 0\n\n", 1, sse.ErrEventTooLarge)
	// The final line terminator counts as one byte, CRLF or not.
	f(12, "data: 0123\n\r\n", 1, nil)
	f(12, "data: 0123\r\n\r\n", 0, sse.ErrEventTooLarge)
	f(13, "data: 0123\r\n\r\n", 1, nil)
	// Comment-only blocks count too.
	f(12, ": 0123456789abc\n\ndata: x\n\n", 0, sse.ErrEventTooLarge)
	// Unterminated final event.
	f(10, "data: 0123", 1, nil)
	f(9, "data: 0123", 0, sse.ErrEventTooLarge)
	// A long line without a terminator.
	f(100, "data: "+strings.Repeat("x", 1000), 0, sse.ErrEventTooLarge)

	if !strings.HasPrefix(sse.ErrEventTooLarge.Error(), "sse: ") {
		t.Fatalf("error %q lacks the sse: prefix", sse.ErrEventTooLarge)
	}
}

func TestReaderLargeEvent(t *testing.T) {
	// An event far larger than the initial buffer, delivered in small reads,
	// and a CR-only stream with many lines (must not go quadratic).
	data := strings.Repeat("abcdefgh", 256<<10) // 2 MiB
	lines := strings.Repeat("data: x\r", 200_000)
	f := func(in string, sizes []int, wantData string) {
		t.Helper()
		var r sse.Reader
		var cr chunkReader
		cr.Reset([]byte(in), sizes)
		evs, err := readAll(&r, &cr)
		if err != nil {
			t.Fatalf("unexpected error: %s", err)
		}
		if len(evs) != 1 || evs[0].Data != wantData {
			t.Fatalf("got %d events; want 1 with %d bytes of data", len(evs), len(wantData))
		}
	}
	f("data: "+data+"\n\n", []int{1000}, data)
	f("data: "+data+"\n\n", nil, data)
	f(lines+"\r", []int{4096}, strings.Repeat("x\n", 199_999)+"x")
	f(lines+"\r", nil, strings.Repeat("x\n", 199_999)+"x")
}

type errReader struct {
	data []byte
	err  error
}

func (e *errReader) Read(p []byte) (int, error) {
	n := copy(p, e.data)
	e.data = e.data[n:]
	if len(e.data) == 0 {
		return n, e.err
	}
	return n, nil
}

func TestReaderReadError(t *testing.T) {
	errBoom := errors.New("boom")
	f := func(in string, wantEvents int) {
		t.Helper()
		var r sse.Reader
		evs, err := readAll(&r, &errReader{data: []byte(in), err: errBoom})
		if err != errBoom || len(evs) != wantEvents {
			t.Fatalf("input %q: got %d events, error %v; want %d events, error %v",
				in, len(evs), err, wantEvents, errBoom)
		}
		if _, err := r.Next(); err != errBoom {
			t.Fatalf("error is not sticky: got %v", err)
		}
	}
	f("", 0)
	f("data: x\n", 0)
	f("data: x\n\n", 1)
	f("data: x\n\ndata: y\n\ndata: z", 2)
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

func TestReaderNoProgress(t *testing.T) {
	var r sse.Reader
	r.Reset(emptyReader{})
	if _, err := r.Next(); err != io.ErrNoProgress {
		t.Fatalf("got error %v; want io.ErrNoProgress", err)
	}
}

func TestReaderZeroAndNilSource(t *testing.T) {
	var r sse.Reader
	r.Reset(nil)
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("got error %v; want io.EOF", err)
	}
}

func TestReaderPool(t *testing.T) {
	for range 3 {
		r := sse.AcquireReader(strings.NewReader("event: a\ndata: 1\ndata: 2\n\n"))
		ev, err := r.Next()
		if err != nil || string(ev.Name) != "a" || string(ev.Data) != "1\n2" {
			t.Fatalf("unexpected event %s, error %v", copyEvent(ev), err)
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("got error %v; want io.EOF", err)
		}
		sse.ReleaseReader(r)
	}
}

func TestEventSlicesAreClipped(t *testing.T) {
	var r sse.Reader
	r.Reset(strings.NewReader("event: a\ndata: b\n\ndata: c\ndata: d\n\n"))
	ev, err := r.Next()
	if err != nil {
		t.Fatalf("unexpected error: %s", err)
	}
	_ = append(ev.Name, "XXXXXXXX"...)
	_ = append(ev.Data, "XXXXXXXX"...)
	_ = append(ev.Raw, "XXXXXXXX"...)
	ev, err = r.Next()
	if err != nil || string(ev.Data) != "c\nd" || string(ev.Raw) != "data: c\ndata: d\n\n" {
		t.Fatalf("unexpected event %s, error %v", copyEvent(ev), err)
	}
	_ = append(ev.Data, "XXXXXXXX"...)
}

func TestPending(t *testing.T) {
	f := func(input string, reads int, want bool) {
		t.Helper()
		r := sse.AcquireReader(strings.NewReader(input))
		defer sse.ReleaseReader(r)
		for i := 0; i < reads; i++ {
			if _, err := r.Next(); err != nil {
				t.Fatalf("%q: read %d: %v", input, i, err)
			}
		}
		if got := r.Pending(); got != want {
			t.Fatalf("%q after %d events: Pending = %v; want %v", input, reads, got, want)
		}
	}
	f("data: a\n\ndata: b\n\n", 1, true)         // a second event is buffered
	f("data: a\n\ndata: b\n\n", 2, false)        // nothing left
	f("data: a\n\ndata: b", 1, false)            // the next one is incomplete
	f("data: a\r\n\r\ndata: b\r\n\r\n", 1, true) // CRLF
	f("data: a\r\rdata: b\r\rdata: c", 1, true)  // CR only
	f("data: a\n\n: keep-alive\n\n", 1, false)   // only a comment block waits: Next would block
	f("data: a\n\n: c\n\ndata: b\n\n", 1, true)  // an event behind a comment block
}

func TestIsEventStream(t *testing.T) {
	for ct, want := range map[string]bool{
		"text/event-stream":                true,
		"Text/Event-Stream; charset=utf-8": true,
		"text/event-stream ;charset=utf-8": true,
		"text/event-streamx":               false,
		"application/json":                 false,
		"":                                 false,
	} {
		if got := sse.IsEventStream([]byte(ct)); got != want {
			t.Errorf("IsEventStream(%q) = %v; want %v", ct, got, want)
		}
	}
}
