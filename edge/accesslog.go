package edge

import (
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"gw/sse/rawjson"
)

// AccessLogQueue is the number of lines that may wait for the writer; past
// it lines are dropped and counted (the request never waits for logging).
const AccessLogQueue = 32768

var logDrops = metrics.NewCounter(`gw_log_lines_dropped_total`)

// AccessLog writes one JSON line per request from a background goroutine.
type AccessLog struct {
	ch   chan *[]byte
	w    io.Writer
	done chan struct{}
	once sync.Once
}

// NewAccessLog starts the writer goroutine.
func NewAccessLog(w io.Writer) *AccessLog {
	l := &AccessLog{ch: make(chan *[]byte, AccessLogQueue), w: w, done: make(chan struct{})}
	go l.run()
	return l
}

var lineBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func (l *AccessLog) run() {
	defer close(l.done)
	out := make([]byte, 0, atomicWrite)
	for b := range l.ch {
		out = l.take(out[:0], b)
		// Lines already queued go out with it: a busy gateway makes one
		// write per several lines instead of one each, and a lone line is
		// never held back waiting for company.
	more:
		for {
			select {
			case b, ok := <-l.ch:
				if !ok {
					break more
				}
				if len(out)+len(*b) > atomicWrite {
					_, _ = l.w.Write(out)
					out = out[:0]
				}
				out = l.take(out, b)
			default:
				break more
			}
		}
		_, _ = l.w.Write(out)
		// Linger before the next wait: lines queued meanwhile are taken in
		// the next round without waking this goroutine per line, so at any
		// load the log costs at most one wakeup and a few writes per
		// linger instead of a wakeup (futex) and a write per request.
		time.Sleep(accessLogLinger)
	}
}

// accessLogLinger is how long the writer lets lines gather after a write:
// the most a line waits beyond its request's end when the log is busy.
const accessLogLinger = 5 * time.Millisecond

// atomicWrite bounds one write of several lines: the log shares stderr
// with other writers, and a pipe keeps a write whole only up to PIPE_BUF
// (4096 bytes on Linux), so lines are never cut by another writer's.
const atomicWrite = 4096

// take appends a queued line to out and recycles its buffer.
func (l *AccessLog) take(out []byte, b *[]byte) []byte {
	out = append(out, *b...)
	*b = (*b)[:0]
	lineBufPool.Put(b)
	return out
}

// Close flushes queued lines and stops the writer.
func (l *AccessLog) Close() {
	l.once.Do(func() { close(l.ch) })
	<-l.done
}

// emit queues a finished line, or drops it when the queue is full.
func (l *AccessLog) emit(b *[]byte) {
	select {
	case l.ch <- b:
	default:
		logDrops.Inc()
		*b = (*b)[:0]
		lineBufPool.Put(b)
	}
}

// line renders the access-log line of c. It never holds a key, a prompt or a
// completion: only identities, sizes, timings and token counts.
func (l *AccessLog) line(c *call, method, path []byte, status, reqBytes int, stream bool) {
	b := lineBufPool.Get().(*[]byte)
	d := *b
	d = append(d, `{"ts":"`...)
	d = c.start.UTC().AppendFormat(d, time.RFC3339Nano)
	d = append(d, `","msg":"access","method":`...)
	d = rawjson.AppendQuoteBytes(d, method)
	d = append(d, `,"path":`...)
	// Bytes, not string(path): a conversion whose string may be returned
	// (truncate) is a heap allocation per request.
	if len(path) > 256 {
		d = rawjson.AppendQuoteBytes(d, path[:256])
		d = append(d[:len(d)-1], `..."`...)
	} else {
		d = rawjson.AppendQuoteBytes(d, path)
	}
	d = append(d, `,"status":`...)
	d = strconv.AppendInt(d, int64(status), 10)
	if c.caller != nil {
		d = append(d, `,"api_key":`...)
		d = rawjson.AppendQuote(d, c.caller.Key.DisplayName)
	}
	if c.plan != nil {
		d = append(d, `,"model":`...)
		d = append(d, c.plan.AliasJSON...)
	}
	if c.target != nil {
		d = append(d, `,"upstream_model":`...)
		d = append(d, c.target.UpstreamModelJSON...)
		d = append(d, `,"provider_key":`...)
		d = rawjson.AppendQuote(d, c.target.Model.ProviderKeyName)
	}
	d = append(d, `,"stream":`...)
	d = strconv.AppendBool(d, stream)
	d = append(d, `,"attempts":`...)
	d = strconv.AppendInt(d, int64(c.attempts), 10)
	d = append(d, `,"duration_ms":`...)
	d = strconv.AppendFloat(d, float64(time.Since(c.start).Microseconds())/1000, 'f', 3, 64)
	d = append(d, `,"upstream_ms":`...)
	d = strconv.AppendFloat(d, float64(c.upstreamDur.Microseconds())/1000, 'f', 3, 64)
	d = append(d, `,"request_body_bytes":`...)
	d = strconv.AppendInt(d, int64(reqBytes), 10)
	d = append(d, `,"response_body_bytes":`...)
	d = strconv.AppendInt(d, int64(c.respBytes), 10)
	if c.haveUsage {
		d = append(d, `,"prompt_tokens":`...)
		d = strconv.AppendInt(d, c.usage.Prompt, 10)
		d = append(d, `,"completion_tokens":`...)
		d = strconv.AppendInt(d, c.usage.Completion, 10)
		d = append(d, `,"total_tokens":`...)
		d = strconv.AppendInt(d, c.usage.Total, 10)
	}
	if c.errClass != "" {
		d = append(d, `,"error_class":`...)
		d = rawjson.AppendQuote(d, c.errClass)
	}
	d = append(d, "}\n"...)
	*b = d
	l.emit(b)
}
