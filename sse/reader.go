// Package sse frames Server-Sent Events: a zero-copy Reader for upstream
// streams and append-style helpers for writing events.
//
// Framing follows the WHATWG "event stream interpretation" rules
// (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation)
// with the deviations a gateway needs, listed on Reader.
package sse

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"sync"
)

// ErrEventTooLarge is returned by Reader.Next when an event (or a block of
// comments) is longer than Reader.MaxEventSize. It is sticky: every later
// call to Next returns it until Reset.
var ErrEventTooLarge = errors.New("sse: event too large")

// DefaultMaxEventSize is the event size limit used when Reader.MaxEventSize is 0.
const DefaultMaxEventSize = 16 << 20

const (
	// initialBufSize fits several typical chunks (300-600 bytes each) so that
	// one Read usually brings in more than one event.
	initialBufSize = 4096

	// minReadSize is the least free space handed to the source's Read;
	// below it the buffer is compacted or grown first.
	minReadSize = 512

	// maxPooledBufSize caps what ReleaseReader keeps, so one huge event
	// (a base64 image) does not pin megabytes in the pool forever.
	maxPooledBufSize = 1 << 20

	// maxEmptyReads mirrors bufio: a source that keeps returning 0, nil
	// is broken.
	maxEmptyReads = 100
)

// Event is one dispatched SSE event.
//
// All slices point into the Reader's buffers and are valid only until the
// next call to Next, Reset or ReleaseReader. Copy what must outlive that.
// The slices have their capacity clipped, so appending to them copies
// instead of clobbering the Reader's buffer.
type Event struct {
	// Name is the value of the last `event:` field; empty means "message".
	Name []byte

	// Data is the values of all `data:` fields joined with '\n'.
	// It never contains '\r'.
	Data []byte

	// ID is the value of the last `id:` field of this event (empty if none).
	// Unlike a browser, the Reader does not carry the last event ID over
	// to following events.
	ID []byte

	// Raw is the exact bytes of the event as received, from its first line
	// (comment lines in the same block included) through its terminating
	// blank line. Blank lines and comment-only blocks in between events
	// are not part of any Raw.
	//
	// One exception: when the CR of a CRLF blank line is the last byte
	// read so far, the event is returned at once (no waiting for the next
	// upstream chunk) and Raw ends with that CR; the LF that follows is
	// swallowed. Raw is still a complete, valid event.
	Raw []byte

	// Retry is the value of the last valid `retry:` field in milliseconds,
	// or -1 if there is none.
	Retry int

	// Unterminated is true for a final event cut off by EOF before its
	// blank line (Gemini sometimes ends this way). Raw then lacks the
	// terminator; append "\n\n" when relaying it.
	Unterminated bool
}

// Reader reads SSE events from an io.Reader, typically an upstream HTTP
// body arriving in arbitrary pieces.
//
// Lines end in "\n", "\r\n" or "\r"; a CRLF split across two reads counts
// as one terminator. One optional space after the field colon is stripped.
// A line without a colon is a field with an empty value; unknown fields are
// ignored. Comment lines (starting with ':') are skipped silently and
// counted, see Comments. Blocks with neither data nor an event name (lone
// comments, keep-alives, id- or retry-only blocks) are not returned.
//
// Deviating from browsers: an event with `event:` but no `data:` is
// returned (with empty Data), and a final event not followed by a blank
// line is returned at EOF with Unterminated set, before io.EOF.
//
// The Reader keeps one growable buffer and returns sub-slices of it; it
// copies only when an event has two or more data lines (the join is built
// in a scratch buffer) and when it moves a partial event to the front of
// the buffer. After warm-up Next does not allocate.
//
// The zero Reader has no source; call Reset or use AcquireReader.
// A Reader must not be used from several goroutines at once.
type Reader struct {
	noCopy noCopy //nolint:unused

	// MaxEventSize limits the size of one event (Raw, with its final line
	// terminator counted as one byte). 0 means DefaultMaxEventSize.
	// Reset keeps it; ReleaseReader clears it.
	MaxEventSize int

	src io.Reader

	// buf[start:end] holds unconsumed bytes. start is the first byte of the
	// current block (the future Raw). Lines before pos are parsed; the
	// line at pos has been scanned up to scan without finding a terminator.
	// len(buf) == cap(buf) always.
	buf   []byte
	start int
	end   int
	pos   int
	scan  int

	// lf caches the position of the next '\n' at or after scan, so CR-only
	// streams are not rescanned quadratically. It is stale when lf < scan;
	// then buf[scan:noLF] is known to hold no '\n'.
	lf   int
	noLF int

	// afterCR is set when a line ended in '\r' that was the last byte
	// read; a '\n' arriving next belongs to the same terminator.
	afterCR bool

	srcErr     error // error from src, io.EOF included; returned once the buffer drains
	fatal      error // ErrEventTooLarge or io.ErrNoProgress; sticky
	emptyReads int
	comments   int

	// The current block's fields, as offsets relative to start: so that
	// compaction, which moves start, need not touch them.
	nameStart, nameEnd int
	idStart, idEnd     int
	dataStart, dataEnd int // first data line
	dataLines          int
	retry              int
	scratch            []byte // joined data when dataLines >= 2
}

var readerPool sync.Pool

// AcquireReader returns a Reader reading from src, from a pool.
//
// Return it with ReleaseReader when done; the events it returned must not
// be used after that.
func AcquireReader(src io.Reader) *Reader {
	v := readerPool.Get()
	if v == nil {
		r := &Reader{}
		r.Reset(src)
		return r
	}
	r := v.(*Reader)
	r.Reset(src)
	return r
}

// ReleaseReader resets r (MaxEventSize included) and returns it to the pool.
// r and every Event it returned must not be used after this call.
func ReleaseReader(r *Reader) {
	r.Reset(nil)
	r.MaxEventSize = 0
	if cap(r.buf) > maxPooledBufSize {
		r.buf = nil
	}
	if cap(r.scratch) > maxPooledBufSize {
		r.scratch = nil
	}
	readerPool.Put(r)
}

// Reset makes r read from src, dropping all buffered data and errors.
// It keeps the buffers and MaxEventSize.
func (r *Reader) Reset(src io.Reader) {
	r.src = src
	r.start, r.end, r.pos, r.scan = 0, 0, 0, 0
	r.lf, r.noLF = -1, 0
	r.afterCR = false
	r.srcErr, r.fatal = nil, nil
	r.emptyReads = 0
	r.comments = 0
	r.resetBlock()
}

// Comments returns the number of comment lines (keep-alives) skipped since
// the last Reset. Next never returns comments: it keeps reading through
// keep-alives until a real event, an error or EOF.
func (r *Reader) Comments() int {
	return r.comments
}

// Next returns the next event.
//
// At the end of the stream it returns a final event left without its blank
// line (Unterminated set), if any, and then io.EOF. A read error of the source
// other than io.EOF is returned as is, after the events that were complete
// before it; a partial event is then dropped. Errors are sticky.
// The Event's slices are valid until the next call to Next, Reset or
// ReleaseReader.
func (r *Reader) Next() (Event, error) {
	for {
		if r.fatal != nil {
			return Event{}, r.fatal
		}
		if ev, ok := r.parse(); ok {
			return ev, nil
		}
		if r.fatal != nil {
			return Event{}, r.fatal
		}
		if r.srcErr != nil {
			if r.srcErr != io.EOF {
				return Event{}, r.srcErr
			}
			if ev, ok := r.finish(); ok {
				return ev, nil
			}
			if r.fatal != nil {
				return Event{}, r.fatal
			}
			return Event{}, io.EOF
		}
		r.fill()
	}
}

// parse consumes complete lines from buf[pos:end] until an event is ready.
// It returns false when more data is needed (or r.fatal was set).
func (r *Reader) parse() (Event, bool) {
	for {
		if r.afterCR {
			if r.pos == r.end {
				return Event{}, false
			}
			r.afterCR = false
			if r.buf[r.pos] == '\n' {
				// Second half of a CRLF split across reads.
				if r.pos == r.start {
					r.start++ // not part of the next block's Raw
				}
				r.pos++
				r.scan = r.pos
			}
		}
		i := r.indexEOL()
		if i < 0 {
			r.scan = r.end
			return Event{}, false
		}
		lineStart := r.pos
		next := i + 1
		if r.buf[i] == '\r' {
			if next < r.end {
				if r.buf[next] == '\n' {
					next++
				}
			} else {
				r.afterCR = true
			}
		}
		r.pos, r.scan = next, next
		if i > lineStart {
			r.processLine(lineStart, i)
			continue
		}
		// Blank line: the block ends. Its size counts the blank line's
		// terminator as one byte, so it does not depend on whether the LF
		// of a CRLF arrived in the same read.
		if ev, ok := r.dispatch(next, i+1, false); ok {
			return ev, true
		}
		if r.fatal != nil {
			return Event{}, false
		}
	}
}

// indexEOL returns the position of the first '\r' or '\n' at or after
// r.scan, or -1 if buf[scan:end] has none.
func (r *Reader) indexEOL() int {
	s := r.scan
	if r.lf < s {
		from := max(s, r.noLF)
		if j := bytes.IndexByte(r.buf[from:r.end], '\n'); j >= 0 {
			r.lf = from + j
		} else {
			r.lf, r.noLF = -1, r.end
		}
	}
	hi := r.end
	if r.lf >= 0 {
		hi = r.lf
	}
	if j := bytes.IndexByte(r.buf[s:hi], '\r'); j >= 0 {
		return s + j
	}
	return r.lf
}

// processLine handles the non-empty line buf[ls:le].
func (r *Reader) processLine(ls, le int) {
	line := r.buf[ls:le]
	if line[0] == ':' {
		r.comments++
		return
	}
	name := line
	vs := le // value start
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name = line[:i]
		vs = ls + i + 1
		if vs < le && r.buf[vs] == ' ' {
			vs++
		}
	}
	base := r.start
	switch string(name) {
	case "data":
		r.dataLines++
		switch r.dataLines {
		case 1:
			r.dataStart, r.dataEnd = vs-base, le-base
			return
		case 2:
			// Slow path - multi-line data is joined in the scratch buffer.
			r.scratch = append(r.scratch[:0], r.buf[base+r.dataStart:base+r.dataEnd]...)
		}
		r.scratch = append(r.scratch, '\n')
		r.scratch = append(r.scratch, r.buf[vs:le]...)
	case "event":
		r.nameStart, r.nameEnd = vs-base, le-base
	case "id":
		if bytes.IndexByte(r.buf[vs:le], 0) < 0 {
			r.idStart, r.idEnd = vs-base, le-base
		}
	case "retry":
		if n, ok := parseRetry(r.buf[vs:le]); ok {
			r.retry = n
		}
	}
}

// dispatch ends the current block at rawEnd; sizeEnd is where its size is
// measured to. It returns the event unless the block carries neither data
// nor a name.
func (r *Reader) dispatch(rawEnd, sizeEnd int, unterminated bool) (Event, bool) {
	if sizeEnd-r.start > r.maxEventSize() {
		r.fatal = ErrEventTooLarge
		return Event{}, false
	}
	base := r.start
	r.start = rawEnd
	if r.dataLines == 0 && r.nameEnd == r.nameStart {
		r.resetBlock()
		return Event{}, false
	}
	ev := Event{
		Raw:          r.buf[base:rawEnd:rawEnd],
		Retry:        r.retry,
		Unterminated: unterminated,
	}
	if r.nameEnd > r.nameStart {
		ev.Name = r.buf[base+r.nameStart : base+r.nameEnd : base+r.nameEnd]
	}
	if r.idEnd > r.idStart {
		ev.ID = r.buf[base+r.idStart : base+r.idEnd : base+r.idEnd]
	}
	switch {
	case r.dataLines == 1:
		ev.Data = r.buf[base+r.dataStart : base+r.dataEnd : base+r.dataEnd]
	case r.dataLines > 1:
		ev.Data = r.scratch[:len(r.scratch):len(r.scratch)]
	}
	r.resetBlock()
	return ev, true
}

// finish is called at EOF once no complete event is buffered: the trailing
// unterminated line and block become the last event.
func (r *Reader) finish() (Event, bool) {
	if r.pos < r.end {
		// The last line has no terminator; indexEOL found none in it.
		r.processLine(r.pos, r.end)
		r.pos, r.scan = r.end, r.end
	}
	return r.dispatch(r.end, r.end, true)
}

// fill reads more data from src into buf, compacting or growing it first
// when little room is left.
func (r *Reader) fill() {
	if r.src == nil {
		r.srcErr = io.EOF
		return
	}
	maxSize := r.maxEventSize()
	if r.end-r.start > maxSize {
		// The current block is incomplete and already too long.
		r.fatal = ErrEventTooLarge
		return
	}
	if r.start == r.end {
		// Everything was consumed: rewind for free.
		r.shift(r.start)
	}
	if len(r.buf)-r.end < minReadSize {
		if r.start > 0 {
			copy(r.buf, r.buf[r.start:r.end])
			r.shift(r.start)
		}
		if len(r.buf)-r.end < minReadSize {
			r.grow(maxSize)
		}
	}
	// Never hold more than maxSize+1 bytes of one block: enough to tell
	// that it is too large.
	hi := min(len(r.buf), r.start+maxSize+1)
	n, err := r.src.Read(r.buf[r.end:hi])
	if n < 0 || n > hi-r.end {
		panic("BUG: sse: the source io.Reader returned an invalid count from Read")
	}
	r.end += n
	if err != nil {
		r.srcErr = err
		return
	}
	if n > 0 {
		r.emptyReads = 0
		return
	}
	r.emptyReads++
	if r.emptyReads >= maxEmptyReads {
		r.fatal = io.ErrNoProgress
	}
}

// grow enlarges buf; the caller has moved the current block to the front.
func (r *Reader) grow(maxSize int) {
	newSize := max(2*len(r.buf), initialBufSize)
	// A block never needs more than maxSize+1 bytes, plus read room.
	newSize = min(newSize, maxSize+1+minReadSize)
	if newSize <= len(r.buf) {
		return
	}
	b := make([]byte, newSize)
	copy(b, r.buf[:r.end])
	r.buf = b
}

// shift moves all absolute positions d bytes towards the front.
// Block field offsets are relative to start and need no change.
func (r *Reader) shift(d int) {
	if d == 0 {
		return
	}
	r.start -= d
	r.end -= d
	r.pos -= d
	r.scan -= d
	if r.lf >= 0 {
		r.lf -= d // may go negative, which only means stale
	}
	r.noLF = max(r.noLF-d, 0)
}

func (r *Reader) resetBlock() {
	r.nameStart, r.nameEnd = 0, 0
	r.idStart, r.idEnd = 0, 0
	r.dataStart, r.dataEnd = 0, 0
	r.dataLines = 0
	r.retry = -1
	r.scratch = r.scratch[:0]
}

func (r *Reader) maxEventSize() int {
	if r.MaxEventSize > 0 {
		return r.MaxEventSize
	}
	return DefaultMaxEventSize
}

// parseRetry parses a `retry:` value: ASCII digits only, clamped to MaxInt32.
func parseRetry(b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n <= math.MaxInt32 {
			n = n*10 + int(c-'0')
		}
	}
	return min(n, math.MaxInt32), true
}

// noCopy makes `go vet` flag copies of a Reader.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// Pending reports whether the bytes already buffered hold at least one more
// complete block with a field line (not only comments), i.e. whether the
// next call to Next will return an event without reading from the source. A
// relay uses it to flush its writer only when no further event is waiting,
// so events that arrived together go out in one write while an event never
// waits behind a blocking read.
func (r *Reader) Pending() bool {
	b := r.buf[r.pos:r.end]
	field := false // the current block has a non-comment line
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' && b[i] != '\r' {
			i++
		}
		if i == len(b) {
			return false // an unterminated line: the block is incomplete
		}
		line := b[:i]
		n := 1
		if b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
			n = 2
		} else if b[i] == '\r' && i+1 == len(b) {
			return false // a CR that may still be followed by LF
		}
		b = b[i+n:]
		switch {
		case len(line) == 0:
			if field {
				return true
			}
		case line[0] != ':':
			field = true
		}
	}
	return false
}

// IsEventStream reports whether the Content-Type value ct is
// text/event-stream (any case, parameters such as charset allowed).
func IsEventStream(ct []byte) bool {
	const es = "text/event-stream"
	if len(ct) < len(es) || !strings.EqualFold(string(ct[:len(es)]), es) {
		return false
	}
	rest := strings.TrimLeft(string(ct[len(es):]), " \t")
	return rest == "" || rest[0] == ';'
}
