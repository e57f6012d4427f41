package mock

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// streamBody is one wire format's streaming answer. Server.drive owns pacing and fault
// injection and calls the methods in order: writeStart, writeEvent(0..events()-1),
// writeEnd; stream_error_after replaces the rest of that sequence by writeStreamError.
// Every call is followed by a flush; a method writing several events flushes between
// them itself.
type streamBody interface {
	// events is the number of content events (text chunks, tool-call headers and
	// argument fragments). The fault knobs (fail_after, stall_after, stream_error_after)
	// count these.
	events() int
	writeStart(w *bufio.Writer)
	writeEvent(w *bufio.Writer, i int)
	writeEnd(w *bufio.Writer)
	// writeStreamError ends the stream with the format's mid-stream error.
	writeStreamError(w *bufio.Writer)
	// release returns the body to its pool after the stream ended.
	release()
}

// streamJob carries one streaming answer from the handler into the writer goroutine.
type streamJob struct {
	s      *Server
	k      Knobs
	body   streamBody
	header []byte // raw response header for the hijacked (fail_after) path

	// run and runCut bound once per pooled job: a method value per stream would allocate.
	runFn    fasthttp.StreamWriter
	runCutFn fasthttp.HijackHandler
}

var streamJobPool sync.Pool

func acquireStreamJob() *streamJob {
	if v := streamJobPool.Get(); v != nil {
		return v.(*streamJob)
	}
	j := new(streamJob)
	j.runFn, j.runCutFn = j.run, j.runCut
	return j
}

// stream answers ctx with body. Normally the body goes through fasthttp's body stream
// writer with the headers flushed at once. With fail_after the connection is hijacked and
// the chunked body written by hand, so that it can end without its terminating chunk.
func (s *Server) stream(ctx *fasthttp.RequestCtx, k *Knobs, body streamBody) {
	s.stats.streams.Add(1)
	h := &ctx.Response.Header
	h.SetContentTypeBytes(strEventStream)
	h.SetCanonical(strCacheControl, strNoCache)
	h.SetCanonical(strXAccelBuffer, strNo)

	j := acquireStreamJob()
	j.s, j.k, j.body = s, *k, body
	if k.Fail {
		// Slow path - a deliberately broken response.
		h.SetContentLength(-1) // Transfer-Encoding: chunked
		h.SetConnectionClose()
		j.header = append(j.header[:0], h.Header()...)
		ctx.HijackSetNoResponse(true)
		ctx.Hijack(j.runCutFn)
		return
	}
	ctx.Response.ImmediateHeaderFlush = true
	ctx.SetBodyStreamWriter(j.runFn)
}

func (j *streamJob) run(w *bufio.Writer) {
	j.s.drive(w, &j.k, j.body)
	j.release()
}

// runCut is the hijack handler of a fail_after stream. fasthttp closes c when it returns,
// so the client sees a chunked body without its terminating chunk.
func (j *streamJob) runCut(c net.Conn) {
	if _, err := c.Write(j.header); err == nil {
		cw := chunkedWriter{w: c}
		bw := bufio.NewWriterSize(&cw, 4096)
		j.s.drive(bw, &j.k, j.body)
		_ = bw.Flush()
	}
	j.s.stats.cuts.Add(1)
	j.release()
}

func (j *streamJob) release() {
	s := j.s
	j.body.release()
	j.s, j.k, j.body, j.header = nil, Knobs{}, nil, j.header[:0]
	streamJobPool.Put(j)
	s.stats.inFlight.Add(-1)
}

// drive writes body to w, applying first_token_delay, chunk_delay, stall_after,
// stream_error_after and fail_after. It stops early when a write fails (the client left)
// or Shutdown began.
func (s *Server) drive(w *bufio.Writer, k *Knobs, body streamBody) {
	var p pacer
	defer p.stop()
	if !p.sleep(s.done, k.FirstTokenDelay) {
		return
	}
	body.writeStart(w)
	if w.Flush() != nil {
		return
	}
	n := body.events()
	// A fault position at or past the last event fires before the end events. At the
	// same position the cut comes first, then the stall, then the error event.
	failAt, stallAt, errAt := min(k.FailAfter, n), min(k.StallAfter, n), min(k.StreamErrorAfter, n)
	for i := 0; i <= n; i++ {
		if k.Fail && i == failAt {
			return
		}
		if k.Stall && i == stallAt && !p.sleep(s.done, k.StallFor) {
			return
		}
		if k.StreamError && i == errAt {
			// The error takes the place of the next event, so it keeps the pace.
			if i > 0 && !p.sleep(s.done, k.ChunkDelay) {
				return
			}
			s.stats.errors.Add(1)
			body.writeStreamError(w)
			_ = w.Flush()
			return
		}
		if i == n {
			break
		}
		if i > 0 && !p.sleep(s.done, k.ChunkDelay) {
			return
		}
		body.writeEvent(w, i)
		if w.Flush() != nil {
			return
		}
	}
	body.writeEnd(w)
	_ = w.Flush()
}

// pacer sleeps with one reusable timer and wakes up early on done.
type pacer struct {
	t *time.Timer
}

// sleep pauses for d and reports whether done is still open.
func (p *pacer) sleep(done <-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		select {
		case <-done:
			return false
		default:
			return true
		}
	}
	if p.t == nil {
		p.t = time.NewTimer(d)
	} else {
		p.t.Reset(d)
	}
	select {
	case <-p.t.C:
		return true
	case <-done:
		return false
	}
}

func (p *pacer) stop() {
	if p.t != nil {
		p.t.Stop()
	}
}

// chunkedWriter frames every Write as one HTTP/1.1 chunk.
type chunkedWriter struct {
	w   io.Writer
	buf []byte
}

func (cw *chunkedWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	b := strconv.AppendInt(cw.buf[:0], int64(len(p)), 16)
	b = append(b, "\r\n"...)
	b = append(b, p...)
	b = append(b, "\r\n"...)
	cw.buf = b
	if _, err := cw.w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}
