package multipart

import (
	"bytes"
	"errors"
	"io"
	"sync"
)

// Defaults used for zero fields of Limits.
const (
	DefaultMaxBodyBytes   = 512 << 20
	DefaultMaxParts       = 256
	DefaultMaxHeaderBytes = 16 << 10
	DefaultMaxTextBytes   = 1 << 20
	DefaultSpoolMemBytes  = 256 << 10

	// MaxHeaderBytesLimit caps Limits.MaxHeaderBytes: a part's delimiter
	// line and header block must fit the fixed buffer at once.
	MaxHeaderBytesLimit = 32 << 10

	// MaxNames is how many names Prepare's need list, Replace/Remove and
	// Append may each hold; fixed arrays keep the Reader free of maps.
	MaxNames = 8

	bufSize           = 64 << 10
	maxTextBytesLimit = 1 << 30
	minSpoolMem       = 16 << 10
	maxPadding        = 64 // RFC 2046 transport-padding we accept after a boundary
	maxEmptyReads     = 100

	// Pooled Readers drop buffers that grew beyond these, so one huge
	// request does not pin memory in the pool.
	maxPooledArena = 256 << 10
	maxPooledParts = 1024
	maxPooledSpool = 1 << 20
)

// Limits bound what one request may make the Reader hold or read.
type Limits struct {
	// MaxBodyBytes is the most input the Reader reads; more is ErrTooLarge
	// (the edge answers 413). Default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxParts is the most parts a body may have. Default DefaultMaxParts.
	MaxParts int
	// MaxHeaderBytes bounds one part's header block. Default
	// DefaultMaxHeaderBytes, at most MaxHeaderBytesLimit.
	MaxHeaderBytes int
	// MaxTextBytes bounds the sum of all text field values (they are kept
	// in memory). Default DefaultMaxTextBytes.
	MaxTextBytes int
	// SpoolMemBytes is how much of the first pass is kept in memory before
	// it spills to a temporary file. Default DefaultSpoolMemBytes.
	SpoolMemBytes int
	// TempDir is where spill files go; "" means os.TempDir().
	TempDir string
}

func (l *Limits) fill() {
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if l.MaxParts <= 0 {
		l.MaxParts = DefaultMaxParts
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.MaxHeaderBytes > MaxHeaderBytesLimit {
		l.MaxHeaderBytes = MaxHeaderBytesLimit
	}
	if l.MaxTextBytes <= 0 {
		l.MaxTextBytes = DefaultMaxTextBytes
	}
	if l.MaxTextBytes > maxTextBytesLimit {
		// Arena offsets are int32; names and headers share the arena.
		l.MaxTextBytes = maxTextBytesLimit
	}
	if l.SpoolMemBytes <= 0 {
		l.SpoolMemBytes = DefaultSpoolMemBytes
	}
	if l.SpoolMemBytes < minSpoolMem {
		l.SpoolMemBytes = minSpoolMem
	}
}

// Part describes one part of the body. Its slices point into the Reader and
// are valid until the next call to Prepare, Read, WriteTo, Replace, Append
// or Release.
type Part struct {
	Name        []byte
	Filename    []byte // decoded (quoted-pairs resolved, filename* decoded); nil for a text field
	ContentType []byte // nil when the part has no Content-Type header
	Value       []byte // a text field's value; nil for a file
	File        bool   // the part has a filename or filename* parameter
	// Size is the body size in bytes so far (final once the part was read).
	Size int64
	// Held is true when Prepare read the part whole, so Replace and Remove
	// can still change it.
	Held bool
}

type part struct {
	d       disposition
	val     span  // text value in the arena
	dashOff int64 // input offset of the part's dash-boundary ("--" + boundary)
	bodyOff int64 // input offset of the first body byte
	size    int64
	held    bool
	edit    uint8
	repl    span
}

const (
	editNone uint8 = iota
	editReplace
	editRemove
)

type state uint8

const (
	stPreamble state = iota
	stDelim
	stBody
	stClose
	stAppend
	stEpilogue
	stDone
)

type event uint8

const (
	evNone event = iota
	evHeader
	evPartEnd
	evClose
	evEOF
)

type phase uint8

const (
	phNew phase = iota
	phPrepared
	phSpool
	phLive
)

// Reader streams one multipart/form-data body from the caller to the
// upstream in bounded memory. See the package documentation for the two
// passes and the rules. A Reader is not safe for concurrent use.
type Reader struct {
	noCopy noCopy //nolint:unused

	src io.Reader
	lim Limits

	buf   []byte // fixed, bufSize
	r, w  int    // unread input is buf[r:w]
	off   int64  // input offset of buf[0]
	eof   bool
	dashA [2 + maxBoundaryLen]byte
	dash  []byte // "--" + boundary, in dashA
	st    state
	first bool // the next delimiter is the first one (no CRLF before it)
	cur   int  // index in parts of the part being read

	arena     []byte
	textBytes int
	parts     []part

	spool    spool
	ph       phase
	spoolPos int64
	editIdx  int // next part (by index) to look at for an edit
	skip     int // live input bytes dropped by a Remove that ran past the spool

	need     [MaxNames]string
	nNeed    int
	needSeen uint16 // bit i: need[i] was read whole
	edited   [MaxNames]string
	nEdited  int
	appends  [MaxNames]span
	nAppends int
	appIdx   int

	// holdAll: the first pass read the whole body (PrepareAll); closeOff is
	// then the input offset of the closing delimiter's CRLF, and appended
	// fields go in at closeOff+2.
	holdAll  bool
	closeOff int64

	pending []byte // Read's unconsumed output
	out     int64
	err     error // sticky
}

var readerPool = sync.Pool{New: func() any { return &Reader{buf: make([]byte, bufSize)} }}

// Acquire returns a Reader for the body src whose Content-Type header value
// is contentType. It fails with ErrMalformed when contentType is not
// multipart/form-data with a valid boundary. The caller must Release it.
func Acquire(src io.Reader, contentType []byte, lim Limits) (*Reader, error) {
	r := readerPool.Get().(*Reader)
	b, err := AppendBoundary(r.dashA[:2:len(r.dashA)], contentType)
	if err != nil {
		readerPool.Put(r)
		return nil, err
	}
	r.dashA[0], r.dashA[1] = '-', '-'
	r.dash = b
	lim.fill()
	r.lim = lim
	r.src = src
	r.spool.memMax = lim.SpoolMemBytes
	r.spool.dir = lim.TempDir
	r.first = true
	r.cur = -1
	return r, nil
}

// Release closes the spill file (its disk space is freed at once) and
// returns r to the pool. r must not be used afterwards. Release(nil) does
// nothing.
func Release(r *Reader) {
	if r == nil {
		return
	}
	r.spool.reset()
	if cap(r.arena) > maxPooledArena {
		r.arena = nil
	}
	if cap(r.parts) > maxPooledParts {
		r.parts = nil
	}
	if cap(r.spool.mem) > maxPooledSpool {
		r.spool.mem = nil
	}
	*r = Reader{
		buf:   r.buf,
		arena: r.arena[:0],
		parts: r.parts[:0],
		spool: spool{mem: r.spool.mem[:0]},
	}
	readerPool.Put(r)
}

// Boundary returns the caller's boundary. The output keeps it, so the
// upstream request's Content-Type is the caller's.
func (r *Reader) Boundary() []byte { return r.dash[2:] }

// BytesRead is how many body bytes were read from the caller so far.
func (r *Reader) BytesRead() int64 { return r.off + int64(r.w) }

// BytesWritten is how many output bytes Read and WriteTo produced so far.
func (r *Reader) BytesWritten() int64 { return r.out }

// NumParts is the number of parts seen so far.
func (r *Reader) NumParts() int { return len(r.parts) }

// Part returns the i-th part seen so far (see Part for how long it is valid).
func (r *Reader) Part(i int) Part {
	p := &r.parts[i]
	out := Part{Name: p.d.name.get(r.arena), File: p.d.file, Size: p.size, Held: p.held}
	if p.d.file {
		out.Filename = p.d.filename.get(r.arena)
	}
	if p.d.hasCType {
		out.ContentType = p.d.ctype.get(r.arena)
	}
	if !p.d.file {
		out.Value = p.val.get(r.arena)
	}
	return out
}

// Value returns the value of the first text field called name seen so far.
func (r *Reader) Value(name string) ([]byte, bool) {
	for i := range r.parts {
		p := &r.parts[i]
		if !p.d.file && string(p.d.name.get(r.arena)) == name {
			return p.val.get(r.arena), true
		}
	}
	return nil, false
}

// AppendValues appends the values of every text field called name seen so
// far to dst, separated by '\n'. This is what a guardrail judges: all of
// them, so a second `prompt` cannot hide behind the first. File data is
// never copied.
func (r *Reader) AppendValues(dst []byte, name string) []byte {
	n := 0
	for i := range r.parts {
		p := &r.parts[i]
		if p.d.file || string(p.d.name.get(r.arena)) != name {
			continue
		}
		if n > 0 {
			dst = append(dst, '\n')
		}
		dst = append(dst, p.val.get(r.arena)...)
		n++
	}
	return dst
}

// fill reads more input into buf after moving the unread bytes to its front.
func (r *Reader) fill() error {
	if r.eof {
		return &Error{Kind: ErrMalformed, Msg: "body ends before the closing boundary", Off: r.BytesRead(), Err: io.ErrUnexpectedEOF}
	}
	if r.r > 0 {
		n := copy(r.buf, r.buf[r.r:r.w])
		r.off += int64(r.r)
		r.w, r.r = n, 0
	}
	if r.w == len(r.buf) {
		panic("BUG: multipart: fill with a full buffer")
	}
	for range maxEmptyReads {
		n, err := r.src.Read(r.buf[r.w:])
		r.w += n
		if r.BytesRead() > r.lim.MaxBodyBytes {
			return tooLarge("body is larger than the limit", r.lim.MaxBodyBytes)
		}
		if err == io.EOF {
			r.eof = true
			return nil
		}
		if err != nil {
			return &Error{Kind: ErrRead, Msg: "cannot read request body", Off: r.BytesRead(), Err: err}
		}
		if n > 0 {
			return nil
		}
	}
	return &Error{Kind: ErrRead, Msg: "cannot read request body", Off: r.BytesRead(), Err: io.ErrNoProgress}
}

// more is fill for a state that cannot go on without more input.
func (r *Reader) more() error {
	if r.eof {
		return &Error{Kind: ErrMalformed, Msg: "body ends before the closing boundary", Off: r.BytesRead(), Err: io.ErrUnexpectedEOF}
	}
	return r.fill()
}

var crlfcrlf = []byte("\r\n\r\n")

// step advances the parser by one piece of raw input and returns it. The
// returned slice points into buf and is valid until the next step.
func (r *Reader) step() ([]byte, event, error) {
	for {
		switch r.st {
		case stPreamble:
			win := r.buf[r.r:r.w]
			keep := len(r.dash) + 1
			from := 0
			for {
				j := bytes.Index(win[from:], r.dash)
				if j < 0 {
					break
				}
				j += from
				// A match at j < 2 that is not at input start was already
				// seen (and rejected) in the previous window.
				if (j == 0 && r.off+int64(r.r) == 0) || (j >= 2 && win[j-2] == '\r' && win[j-1] == '\n') {
					r.r += j
					r.st = stDelim
					return win[:j], evNone, nil
				}
				from = j + 1
			}
			if len(win) > keep {
				seg := win[:len(win)-keep]
				r.r += len(seg)
				return seg, evNone, nil
			}
			if r.eof {
				return nil, evNone, malformed("body has no boundary line", r.BytesRead())
			}
			if err := r.fill(); err != nil {
				return nil, evNone, err
			}

		case stDelim:
			seg, ev, err := r.delimiter()
			if err != nil || ev != evNone {
				return seg, ev, err
			}

		case stBody:
			win := r.buf[r.r:r.w]
			if i := bytes.Index(win, r.dash); i >= 0 {
				if i < 2 || win[i-2] != '\r' || win[i-1] != '\n' {
					return nil, evNone, malformed("boundary inside a part's content", r.off+int64(r.r+i))
				}
				seg := win[:i-2]
				r.r += i - 2
				r.st = stDelim
				if err := r.body(seg); err != nil {
					return nil, evNone, err
				}
				return seg, evPartEnd, nil
			}
			// Hold back enough to see "\r\n--boundary" split across reads.
			if keep := len(r.dash) + 1; len(win) > keep {
				seg := win[:len(win)-keep]
				r.r += len(seg)
				if err := r.body(seg); err != nil {
					return nil, evNone, err
				}
				return seg, evNone, nil
			}
			if err := r.more(); err != nil {
				return nil, evNone, err
			}

		case stClose:
			r.st = stAppend
			if r.skip > 0 {
				r.r += r.skip
				r.skip = 0
				continue
			}
			seg := r.buf[r.r : r.r+2]
			r.r += 2
			return seg, evNone, nil

		case stAppend:
			if r.appIdx < r.nAppends {
				s := r.appends[r.appIdx]
				r.appIdx++
				return s.get(r.arena), evNone, nil
			}
			r.st = stEpilogue

		case stEpilogue:
			if r.r < r.w {
				seg := r.buf[r.r:r.w]
				r.r = r.w
				return seg, evNone, nil
			}
			if r.eof {
				r.st = stDone
				return nil, evEOF, nil
			}
			if err := r.fill(); err != nil {
				return nil, evNone, err
			}

		case stDone:
			return nil, evEOF, nil
		}
	}
}

// body accounts for seg, a piece of the current part's body.
func (r *Reader) body(seg []byte) error {
	p := &r.parts[r.cur]
	p.size += int64(len(seg))
	if p.d.file {
		return nil
	}
	r.textBytes += len(seg)
	if r.textBytes > r.lim.MaxTextBytes {
		return tooLarge("text fields are larger than the limit", r.BytesRead())
	}
	r.arena = append(r.arena, seg...)
	p.val.e = int32(len(r.arena))
	return nil
}

// delimiter handles a boundary line and the part headers after it. It
// returns evNone with no error when it needs more input (after reading it).
func (r *Reader) delimiter() ([]byte, event, error) {
	pre := 2
	if r.first {
		pre = 0
	}
	avail := r.buf[r.r:r.w]
	p := pre + len(r.dash)
	if len(avail) < p+2 {
		return nil, evNone, r.more()
	}
	if avail[p] == '-' && avail[p+1] == '-' {
		if r.first {
			return nil, evNone, malformed("body has no parts", r.off+int64(r.r))
		}
		r.st = stClose
		return nil, evClose, nil
	}
	q := p
	for q < len(avail) && isOWS(avail[q]) {
		q++
		if q-p > maxPadding {
			return nil, evNone, malformed("boundary line has too much padding", r.off+int64(r.r))
		}
	}
	if len(avail)-q < 2 {
		return nil, evNone, r.more()
	}
	if avail[q] != '\r' || avail[q+1] != '\n' {
		return nil, evNone, malformed("boundary is followed by other characters", r.off+int64(r.r+q))
	}
	h := q + 2
	if len(avail)-h < 2 {
		return nil, evNone, r.more()
	}
	if avail[h] == '\r' && avail[h+1] == '\n' {
		return nil, evNone, malformed("part has no headers", r.off+int64(r.r+h))
	}
	k := bytes.Index(avail[h:], crlfcrlf)
	if k < 0 {
		if len(avail)-h > r.lim.MaxHeaderBytes {
			return nil, evNone, tooLarge("part headers are larger than the limit", r.off+int64(r.r+h))
		}
		return nil, evNone, r.more()
	}
	if k+2 > r.lim.MaxHeaderBytes {
		return nil, evNone, tooLarge("part headers are larger than the limit", r.off+int64(r.r+h))
	}
	if len(r.parts) >= r.lim.MaxParts {
		return nil, evNone, tooLarge("body has more parts than the limit", r.off+int64(r.r))
	}
	var d disposition
	var msg string
	r.arena, msg = parseHeaders(avail[h:h+k+2], r.arena, r.dash, &d)
	if msg != "" {
		return nil, evNone, malformed(msg, r.off+int64(r.r+h))
	}
	end := h + k + 4
	o := int32(len(r.arena))
	r.parts = append(r.parts, part{
		d:       d,
		val:     span{o, o},
		dashOff: r.off + int64(r.r+pre),
		bodyOff: r.off + int64(r.r+end),
	})
	r.cur = len(r.parts) - 1
	r.first = false
	r.st = stBody
	seg := avail[:end]
	r.r += end
	return seg, evHeader, nil
}

func (r *Reader) isNeed(name []byte) bool {
	for i := 0; i < r.nNeed; i++ {
		if string(name) == r.need[i] {
			return true
		}
	}
	return false
}

func (r *Reader) isEdited(name []byte) bool {
	for i := 0; i < r.nEdited; i++ {
		if string(name) == r.edited[i] {
			return true
		}
	}
	return false
}

// satisfied reports whether every needed field was read whole.
func (r *Reader) satisfied() bool { return r.needSeen == 1<<r.nNeed-1 }

// errNeedCount is returned when Prepare gets more names than MaxNames.
var errNeedCount = errors.New("multipart: too many names (at most MaxNames)")

// Prepare is the first pass. It reads parts until every field named in
// need (for the gateway: "model", plus "prompt" when a guardrail must judge
// it before anything is sent) has been read, then keeps reading while the
// next parts are text fields, and stops at the first file part after that
// or at the closing boundary. Everything it reads is held (in memory, a
// file part beyond Limits.SpoolMemBytes in a temporary file) until Read or
// WriteTo sends it on. A needed field that is absent makes Prepare read the
// whole body; Value then reports it missing.
//
// A needed name must be a text field and may occur only once in the whole
// body (also after Prepare returns: Read and WriteTo fail on a second one),
// so the value the gateway routed or judged is the one the upstream sees.
func (r *Reader) Prepare(need ...string) error { return r.prepare(false, need) }

// PrepareAll is Prepare that reads and holds the whole body (beyond
// Limits.SpoolMemBytes in the temporary file) before anything is sent. It
// costs the upstream the head start a streamed upload gets, and buys
// Rewind: the output can be produced again, with other edits, for a retry
// or a failover to another target after the first attempt sent bytes.
func (r *Reader) PrepareAll(need ...string) error { return r.prepare(true, need) }

func (r *Reader) prepare(all bool, need []string) error {
	if r.ph != phNew {
		return errors.New("multipart: Prepare called twice")
	}
	if len(need) > MaxNames {
		return errNeedCount
	}
	r.nNeed = copy(r.need[:], need)
	r.ph = phPrepared
	r.holdAll = all
	for {
		seg, ev, err := r.step()
		if err != nil {
			r.err = err
			return err
		}
		if len(seg) > 0 {
			if err := r.spool.write(seg); err != nil {
				r.err = &Error{Kind: ErrSpool, Msg: "cannot hold the body in a temporary file", Off: r.BytesRead(), Err: err}
				return r.err
			}
		}
		switch ev {
		case evHeader:
			p := &r.parts[r.cur]
			name := p.d.name.get(r.arena)
			if r.isNeed(name) {
				if p.d.file {
					r.err = malformed("a needed field is a file part", p.dashOff)
					return r.err
				}
				if r.seenBefore(name) {
					r.err = malformed("a needed field occurs twice", p.dashOff)
					return r.err
				}
			}
			if p.d.file && !r.holdAll && r.satisfied() {
				return nil
			}
		case evPartEnd:
			p := &r.parts[r.cur]
			p.held = true
			if !p.d.file {
				name := p.d.name.get(r.arena)
				for i := 0; i < r.nNeed; i++ {
					if string(name) == r.need[i] {
						r.needSeen |= 1 << i
					}
				}
			}
		case evClose:
			if r.holdAll {
				return r.holdRest()
			}
			return nil
		case evEOF:
			return nil
		}
	}
}

// holdRest spools the closing delimiter and the epilogue (PrepareAll).
func (r *Reader) holdRest() error {
	r.closeOff = r.off + int64(r.r)
	for {
		if r.r < r.w {
			if err := r.spool.write(r.buf[r.r:r.w]); err != nil {
				r.err = &Error{Kind: ErrSpool, Msg: "cannot hold the body in a temporary file", Off: r.BytesRead(), Err: err}
				return r.err
			}
			r.r = r.w
		}
		if r.eof {
			r.st = stDone
			return nil
		}
		if err := r.fill(); err != nil {
			r.err = err
			return err
		}
	}
}

// Rewind makes the output available again after PrepareAll: Read and
// WriteTo start over from the first byte. It drops every edit and appended
// field (make them again for the next target) and resets BytesWritten.
func (r *Reader) Rewind() error {
	if !r.holdAll || r.ph == phNew {
		return errors.New("multipart: Rewind needs PrepareAll")
	}
	if r.err != nil && r.err != io.EOF && !errors.Is(r.err, ErrWrite) {
		return r.err
	}
	for i := range r.parts {
		r.parts[i].edit = editNone
	}
	r.nEdited, r.nAppends, r.appIdx = 0, 0, 0
	r.ph, r.spoolPos, r.editIdx = phPrepared, 0, 0
	r.pending, r.err, r.out = nil, nil, 0
	return nil
}

// seenBefore reports whether a part before the current one has this name.
func (r *Reader) seenBefore(name []byte) bool {
	for i := 0; i < r.cur; i++ {
		if string(r.parts[i].d.name.get(r.arena)) == string(name) {
			return true
		}
	}
	return false
}

var errStarted = errors.New("multipart: output already started")

func (r *Reader) editable() error {
	if r.ph == phNew {
		if err := r.Prepare(); err != nil {
			return err
		}
	}
	if r.ph != phPrepared {
		return errStarted
	}
	return nil
}

// Replace sets the value of every held text field called name (see
// Prepare) and returns how many it changed. A field of that name read later
// by Read or WriteTo is an error (its value would not be replaced). value
// must not contain the boundary; it is copied.
func (r *Reader) Replace(name string, value []byte) (int, error) {
	if err := r.editable(); err != nil {
		return 0, err
	}
	if bytes.Contains(value, r.dash) {
		return 0, errors.New("multipart: replacement value contains the boundary")
	}
	if err := r.markEdited(name); err != nil {
		return 0, err
	}
	o := int32(len(r.arena))
	r.arena = append(r.arena, value...)
	repl := span{o, int32(len(r.arena))}
	n := 0
	for i := range r.parts {
		p := &r.parts[i]
		if p.held && !p.d.file && p.edit != editRemove && string(p.d.name.get(r.arena)) == name {
			p.edit, p.repl = editReplace, repl
			n++
		}
	}
	return n, nil
}

// Remove drops every held part called name (a file part whose body Prepare
// read whole included) and returns how many. A part of that name read later
// by Read or WriteTo is an error.
func (r *Reader) Remove(name string) (int, error) {
	if err := r.editable(); err != nil {
		return 0, err
	}
	if err := r.markEdited(name); err != nil {
		return 0, err
	}
	n := 0
	for i := range r.parts {
		p := &r.parts[i]
		if p.held && string(p.d.name.get(r.arena)) == name {
			p.edit = editRemove
			n++
		}
	}
	return n, nil
}

func (r *Reader) markEdited(name string) error {
	if r.isEdited([]byte(name)) {
		return nil
	}
	if r.nEdited == MaxNames {
		return errNeedCount
	}
	r.edited[r.nEdited] = name
	r.nEdited++
	return nil
}

// Append adds a text field just before the closing boundary. name must not
// contain '"', '\\' or control characters; value must not contain the
// boundary.
func (r *Reader) Append(name string, value []byte) error {
	if err := r.editable(); err != nil {
		return err
	}
	if name == "" {
		return errors.New("multipart: appended field has no name")
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == 0x7f || c == '"' || c == '\\' {
			return errors.New("multipart: appended field name has a character that needs quoting")
		}
	}
	if bytes.Contains(value, r.dash) {
		return errors.New("multipart: appended value contains the boundary")
	}
	if r.nAppends == MaxNames {
		return errNeedCount
	}
	o := int32(len(r.arena))
	r.arena = append(r.arena, r.dash...)
	r.arena = append(r.arena, "\r\nContent-Disposition: form-data; name=\""...)
	r.arena = append(r.arena, name...)
	r.arena = append(r.arena, "\"\r\n\r\n"...)
	r.arena = append(r.arena, value...)
	r.arena = append(r.arena, "\r\n"...)
	r.appends[r.nAppends] = span{o, int32(len(r.arena))}
	r.nAppends++
	return nil
}

// editRange returns the input range part p's edit replaces.
func (p *part) editRange() (start, end int64) {
	if p.edit == editRemove {
		// From its own dash-boundary to the next one: the CRLF before its
		// dash-boundary then precedes the next one.
		return p.dashOff, p.bodyOff + p.size + 2
	}
	return p.bodyOff, p.bodyOff + p.size
}

// OutputSize returns the size of the output for an input of inSize bytes
// (the caller's Content-Length), or -1 if inSize is negative. It is exact
// once Prepare returned and the edits are made.
func (r *Reader) OutputSize(inSize int64) int64 {
	if inSize < 0 {
		return -1
	}
	n := inSize
	for i := range r.parts {
		p := &r.parts[i]
		switch p.edit {
		case editReplace:
			n += int64(p.repl.e-p.repl.o) - p.size
		case editRemove:
			s, e := p.editRange()
			n -= e - s
		}
	}
	for i := 0; i < r.nAppends; i++ {
		n += int64(r.appends[i].e - r.appends[i].o)
	}
	return n
}

// produce returns the next piece of output: first the spooled input with
// the edits applied, then the live input.
func (r *Reader) produce() ([]byte, error) {
	for {
		switch r.ph {
		case phNew:
			if err := r.Prepare(); err != nil {
				return nil, err
			}
		case phPrepared:
			r.ph = phSpool
		case phSpool:
			var next *part
			for r.editIdx < len(r.parts) {
				if p := &r.parts[r.editIdx]; p.edit != editNone {
					next = p
					break
				}
				r.editIdx++
			}
			limit := r.spool.size
			if next != nil {
				s, e := next.editRange()
				if r.spoolPos >= s {
					r.spoolPos = e
					r.editIdx++
					if next.edit == editReplace && next.repl.e > next.repl.o {
						return next.repl.get(r.arena), nil
					}
					continue
				}
				limit = s
			} else if r.holdAll {
				if at := r.closeOff + 2; r.spoolPos >= at && r.appIdx < r.nAppends {
					a := r.appends[r.appIdx]
					r.appIdx++
					return a.get(r.arena), nil
				} else if r.spoolPos < at {
					limit = at
				}
			}
			if r.spoolPos >= limit {
				if r.spoolPos > r.spool.size {
					r.skip = int(r.spoolPos - r.spool.size)
				}
				r.ph = phLive
				continue
			}
			// Reading the spill file needs a buffer: spool memory is free once
			// it was sent, unless Rewind may need it again; then the input
			// buffer is free instead (PrepareAll consumed all input).
			scratch := r.spool.mem[:cap(r.spool.mem)]
			if r.holdAll {
				scratch = r.buf
			}
			seg, err := r.spool.readAt(r.spoolPos, scratch)
			if err != nil {
				return nil, &Error{Kind: ErrSpool, Msg: "cannot read the temporary file", Off: r.spoolPos, Err: err}
			}
			if rest := limit - r.spoolPos; int64(len(seg)) > rest {
				seg = seg[:rest]
			}
			r.spoolPos += int64(len(seg))
			return seg, nil
		case phLive:
			seg, ev, err := r.step()
			if err != nil {
				return nil, err
			}
			switch ev {
			case evHeader:
				name := r.parts[r.cur].d.name.get(r.arena)
				if r.isNeed(name) || r.isEdited(name) {
					return nil, malformed("a needed or rewritten field occurs again after the first pass", r.parts[r.cur].dashOff)
				}
			case evEOF:
				return nil, io.EOF
			}
			if len(seg) > 0 {
				return seg, nil
			}
		}
	}
}

// Read implements io.Reader over the output (for callers that pull).
// WriteTo avoids its copy.
func (r *Reader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		seg, err := r.produce()
		if err != nil {
			r.err = err
			return 0, err
		}
		r.pending = seg
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	r.out += int64(n)
	return n, nil
}

// WriteTo implements io.WriterTo: it writes the rest of the output to w,
// straight from the Reader's buffers (fasthttp's request body stream and
// io.Copy use it). On a malformed or truncated body it returns the error
// before the closing boundary is written, so the upstream never sees a
// complete request; the caller must abort that request.
func (r *Reader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if len(r.pending) == 0 {
			if r.err != nil {
				if r.err == io.EOF {
					return total, nil
				}
				return total, r.err
			}
			seg, err := r.produce()
			if err != nil {
				r.err = err
				continue
			}
			r.pending = seg
		}
		n, err := w.Write(r.pending)
		r.pending = r.pending[n:]
		total += int64(n)
		r.out += int64(n)
		if err == nil && len(r.pending) > 0 {
			err = io.ErrShortWrite
		}
		if err != nil {
			r.err = &Error{Kind: ErrWrite, Msg: "cannot write upstream body", Off: r.out, Err: err}
			return total, r.err
		}
	}
}

// SupportsBodyWriteTo tells fasthttp (its BodyWriterTo interface) that
// WriteTo may stand in for Read on a chunked upstream request too: both
// produce the same bytes with the same accounting.
func (r *Reader) SupportsBodyWriteTo() bool { return true }

// noCopy makes go vet's copylocks check flag copies of a Reader.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
