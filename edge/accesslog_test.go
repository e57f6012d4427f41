package edge

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeRecorder records each Write; the first one blocks until released so
// lines queue up behind it.
type writeRecorder struct {
	mu     sync.Mutex
	writes [][]byte
	gate   chan struct{}
}

func (w *writeRecorder) Write(p []byte) (int, error) {
	if w.gate != nil {
		<-w.gate
	}
	w.mu.Lock()
	w.writes = append(w.writes, append([]byte(nil), p...))
	w.mu.Unlock()
	return len(p), nil
}

// TestAccessLogBatches: lines queued behind a slow write go out several per
// write, each write holds only whole lines and at most atomicWrite bytes
// (a longer line alone), and every line arrives once, in order.
func TestAccessLogBatches(t *testing.T) {
	w := &writeRecorder{gate: make(chan struct{})}
	l := NewAccessLog(w)
	const n = 200
	var want bytes.Buffer
	for i := 0; i < n; i++ {
		line := []byte(`{"n":` + strconv.Itoa(i) + `,"pad":"` + string(bytes.Repeat([]byte("x"), 100+i%50)) + "\"}\n")
		if i == 150 {
			line = append(bytes.Repeat([]byte("y"), 5000), '\n') // longer than one batch
		}
		want.Write(line)
		b := lineBufPool.Get().(*[]byte)
		*b = append((*b)[:0], line...)
		l.emit(b)
	}
	time.Sleep(10 * time.Millisecond)
	close(w.gate)
	l.Close()
	var got bytes.Buffer
	for _, p := range w.writes {
		if len(p) > atomicWrite && bytes.Count(p, []byte("\n")) > 1 {
			t.Fatalf("a write of %d bytes holds several lines", len(p))
		}
		if len(p) == 0 || p[len(p)-1] != '\n' {
			t.Fatalf("a write does not end at a line end: %q", p)
		}
		got.Write(p)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatal("lines lost, repeated or reordered")
	}
	if len(w.writes) >= n/2 {
		t.Fatalf("%d writes for %d queued lines; want them batched", len(w.writes), n)
	}
}

// TestAccessLogLinePath: the method and path are quoted as JSON, a path
// over 256 bytes is cut there with "...", and the line is one JSON object.
func TestAccessLogLinePath(t *testing.T) {
	long := "/v1/" + strings.Repeat("a", 300)
	for _, tc := range []struct{ path, want string }{
		{"/v1/chat/completions", "/v1/chat/completions"},
		{`/v1/x"y\z`, `/v1/x"y\z`},
		{long, long[:256] + "..."},
	} {
		w := &writeRecorder{}
		l := NewAccessLog(w)
		c := &call{start: time.Now()}
		l.line(c, []byte("POST"), []byte(tc.path), 200, 12, false)
		l.Close()
		if len(w.writes) != 1 {
			t.Fatalf("%d writes; want 1", len(w.writes))
		}
		var got struct{ Method, Path string }
		if err := json.Unmarshal(w.writes[0], &got); err != nil {
			t.Fatalf("%s: not one JSON object: %v\n%s", tc.path, err, w.writes[0])
		}
		if got.Method != "POST" || got.Path != tc.want {
			t.Fatalf("method %q path %q; want POST %q", got.Method, got.Path, tc.want)
		}
	}
}
