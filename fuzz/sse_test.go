package fuzz

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"gw/sse"
)

// sseEvent is an owned copy of an sse.Event.
type sseEvent struct {
	Name, Data, ID, Raw string
	Retry               int
	Unterminated        bool
}

// sseChunkReader returns data in chunks of the given sizes, cycling.
type sseChunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (c *sseChunkReader) Read(p []byte) (int, error) {
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

// sseParse reads all events of data, split into reads of the given sizes
// (nil: one piece), and returns them with the final error (nil for io.EOF).
func sseParse(t *testing.T, data []byte, sizes []int, maxSize int) ([]sseEvent, error) {
	r := sse.AcquireReader(&sseChunkReader{data: data, sizes: sizes})
	defer sse.ReleaseReader(r)
	r.MaxEventSize = maxSize
	var evs []sseEvent
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		if len(ev.Raw) == 0 {
			t.Fatalf("event without raw bytes: %+v", ev)
		}
		if bytes.IndexByte(ev.Data, '\r') >= 0 || bytes.ContainsAny(ev.Name, "\r\n") {
			t.Fatalf("line break in a field: %+v", ev)
		}
		evs = append(evs, sseEvent{
			Name: string(ev.Name), Data: string(ev.Data), ID: string(ev.ID), Raw: string(ev.Raw),
			Retry: ev.Retry, Unterminated: ev.Unterminated,
		})
	}
}

// sseSame compares two parses of one input. Raw may lack the final LF of a
// CRLF blank line when the CR ended a read (see sse.Event.Raw).
func sseSame(got, want []sseEvent) error {
	if len(got) != len(want) {
		return fmt.Errorf("got %d events; want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		gr, wr := g.Raw, w.Raw
		if len(gr) > len(wr) {
			gr, wr = wr, gr
		}
		if gr != wr && !(len(wr) == len(gr)+1 && wr[:len(gr)] == gr && wr[len(gr):] == "\n" && gr[len(gr)-1] == '\r') {
			return fmt.Errorf("event #%d: got raw %q; want %q", i, g.Raw, w.Raw)
		}
		g.Raw = w.Raw
		if g != w {
			return fmt.Errorf("event #%d: got %+v; want %+v", i, g, w)
		}
	}
	return nil
}

// sseSplitSizes derives read sizes (1..32, with some 0-byte reads) from the input.
func sseSplitSizes(data []byte) []int {
	if len(data) == 0 {
		return []int{1}
	}
	sizes := make([]int, 0, 16)
	for i := 0; i < len(data) && len(sizes) < 16; i += 1 + len(data)/16 {
		sizes = append(sizes, int(data[i]%33))
	}
	sizes = append(sizes, 1) // ensure progress when all derived sizes are 0
	return sizes
}

func FuzzSSEReader(f *testing.F) {
	paths, err := filepath.Glob("../sse/testdata/*.sse")
	if err != nil || len(paths) == 0 {
		f.Fatalf("cannot find sse fixtures: %v", err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatalf("cannot read %q: %s", p, err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"", "\r\n\r\n", "data: a\r\rdata: b\r\n\r", "data: a\ndata: b\n\n",
		": c\ndata\nevent:e\nid: 1\nretry: 5\n\n", "event: ping\n\n", "data: x",
		"data: a\r\n\r\ndata: b\r\n", "\ndata:  x \r\n\r\n\n",
	} {
		f.Add([]byte(s))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		// Check with the default limit and with a small one derived from the
		// input, so the ErrEventTooLarge paths are split-tested too.
		maxSizes := []int{0, 1}
		if len(data) > 0 {
			maxSizes[1] = 1 + int(data[len(data)-1])%64
		}
		for _, maxSize := range maxSizes {
			whole, wholeErr := sseParse(t, data, nil, maxSize)
			for _, sizes := range [][]int{sseSplitSizes(data), {1}} {
				split, splitErr := sseParse(t, data, sizes, maxSize)
				if splitErr != wholeErr {
					t.Fatalf("max %d, reads %v: got error %v; want %v", maxSize, sizes, splitErr, wholeErr)
				}
				if err := sseSame(split, whole); err != nil {
					t.Fatalf("max %d, reads %v: %s", maxSize, sizes, err)
				}
			}
			if maxSize == 0 && wholeErr != nil {
				t.Fatalf("unexpected error: %s", wholeErr)
			}
		}

		// Re-encode and parse again: names and data must survive.
		whole, _ := sseParse(t, data, nil, 0)
		var out []byte
		for _, ev := range whole {
			out = sse.AppendEvent(out, []byte(ev.Name), []byte(ev.Data))
		}
		again, err := sseParse(t, out, nil, 0)
		if err != nil {
			t.Fatalf("cannot parse re-encoded events: %s", err)
		}
		if len(again) != len(whole) {
			t.Fatalf("re-encoded: got %d events; want %d", len(again), len(whole))
		}
		for i := range whole {
			if again[i].Name != whole[i].Name || again[i].Data != whole[i].Data {
				t.Fatalf("re-encoded event #%d: got %+v; want %+v", i, again[i], whole[i])
			}
			if again[i].Unterminated || again[i].Raw != string(sse.AppendEvent(nil, []byte(whole[i].Name), []byte(whole[i].Data))) {
				t.Fatalf("re-encoded event #%d: unexpected raw %q", i, again[i].Raw)
			}
		}
	})
}
