package edge

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// blockingWriter blocks every Write until released and tells the test when
// the first one has started (the writer goroutine then holds nothing else).
type blockingWriter struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.entered) })
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// TestAccessLogDropsCounted: with the writer stuck, the queue takes exactly
// AccessLogQueue lines; every further line is dropped at once (no request
// waits) and gw_log_lines_dropped_total rises by exactly that many.
func TestAccessLogDropsCounted(t *testing.T) {
	for _, extra := range []int{1, 37} {
		w := &blockingWriter{entered: make(chan struct{}), release: make(chan struct{})}
		l := NewAccessLog(w)
		line := []byte(`{"msg":"access","status":200}` + "\n")
		emitLine := func() {
			b := lineBufPool.Get().(*[]byte)
			*b = append((*b)[:0], line...)
			l.emit(b)
		}
		emitLine() // taken by the writer, which then blocks writing it
		<-w.entered

		before := logDrops.Get()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; i < AccessLogQueue+extra; i++ {
				emitLine()
			}
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			close(w.release)
			t.Fatalf("extra=%d: emitting into a full queue blocked", extra)
		}
		if got := logDrops.Get() - before; got != uint64(extra) {
			t.Fatalf("extra=%d: gw_log_lines_dropped_total rose by %d; want %d", extra, got, extra)
		}
		close(w.release)
		l.Close()
		if n := bytes.Count(w.buf.Bytes(), []byte("\n")); n != 1+AccessLogQueue {
			t.Fatalf("extra=%d: %d lines written; want %d (the first and a full queue)", extra, n, 1+AccessLogQueue)
		}
	}
}
