// Package eventstream decodes the AWS binary event-stream framing
// (`application/vnd.amazon.eventstream`, protocols.md §5.3) that Bedrock's
// ConverseStream and InvokeModelWithResponseStream answer with.
//
// A message is a 12-byte prelude (total length, headers length, CRC32 of
// the first 8 bytes), the headers, the payload and a CRC32 of everything
// before it; integers are big-endian. The Decoder reads messages from an
// io.Reader arriving in arbitrary pieces, checks both CRCs, and returns
// the headers Bedrock uses (:event-type, :message-type, :exception-type,
// :content-type, :error-code, :error-message) as sub-slices of its buffer,
// so steady-state decoding does not allocate.
package eventstream

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"sync"
)

// Limits. botocore allows 128 KiB of headers and 24 MiB of payload; gw
// bounds a whole message by the Decoder's MaxMessageSize instead.
const (
	preludeLen = 12
	minMessage = preludeLen + 4
	// DefaultMaxMessageSize bounds one message (prelude, headers, payload
	// and CRC) when MaxMessageSize is 0: large enough for a tool call's
	// input or an image block, small enough that a corrupt length cannot
	// make the gateway buffer without limit.
	DefaultMaxMessageSize = 16 << 20
	maxHeadersLen         = 128 << 10
	initialBuf            = 4 << 10
	maxEmptyReads         = 100
)

// Errors. A decode error is sticky: the stream cannot be resynchronized.
var (
	ErrPreludeCRC      = errors.New("eventstream: prelude checksum mismatch")
	ErrMessageCRC      = errors.New("eventstream: message checksum mismatch")
	ErrMessageTooLarge = errors.New("eventstream: message larger than the limit")
	ErrBadLength       = errors.New("eventstream: invalid message or headers length")
	ErrBadHeader       = errors.New("eventstream: malformed header")
	// ErrTruncated is returned when the source ends inside a message.
	ErrTruncated = errors.New("eventstream: stream ended inside a message")
)

// Header value types (protocols.md §5.3).
const (
	typeTrue = iota
	typeFalse
	typeByte
	typeShort
	typeInt
	typeLong
	typeBytes
	typeString
	typeTimestamp
	typeUUID
)

// Message is one decoded message. Its slices point into the Decoder's
// buffer and are valid until the next call to Next, Reset or Release.
type Message struct {
	// The string headers Bedrock sends; nil when absent.
	EventType     []byte // :event-type
	MessageType   []byte // :message-type: event, exception or error
	ExceptionType []byte // :exception-type
	ContentType   []byte // :content-type
	ErrorCode     []byte // :error-code (message type error)
	ErrorMessage  []byte // :error-message (message type error)
	// Headers is the raw header block (see ForEachHeader).
	Headers []byte
	Payload []byte
}

// Decoder reads messages from a byte stream. The zero value has no source;
// use Reset or Acquire. A Decoder must not be used from several goroutines
// at once.
type Decoder struct {
	// MaxMessageSize bounds one message; 0 means DefaultMaxMessageSize.
	MaxMessageSize int

	src        io.Reader
	buf        []byte // buf[start:end] holds unconsumed bytes
	start, end int
	err        error // sticky source or decode error
}

var pool sync.Pool

// Acquire returns a pooled Decoder reading src. Return it with Release.
func Acquire(src io.Reader) *Decoder {
	d, _ := pool.Get().(*Decoder)
	if d == nil {
		d = new(Decoder)
	}
	d.Reset(src)
	return d
}

// Release returns d to the pool; the messages it returned die with it.
func Release(d *Decoder) {
	d.Reset(nil)
	d.MaxMessageSize = 0
	if cap(d.buf) > 1<<20 {
		d.buf = nil // one huge message must not pin its buffer in the pool
	}
	pool.Put(d)
}

// Reset makes d read src from the start, keeping its buffer.
func (d *Decoder) Reset(src io.Reader) {
	d.src, d.start, d.end, d.err = src, 0, 0, nil
}

func (d *Decoder) limit() int {
	if d.MaxMessageSize > 0 {
		return d.MaxMessageSize
	}
	return DefaultMaxMessageSize
}

// Pending reports whether a whole message is buffered, so Next will not
// read from the source.
func (d *Decoder) Pending() bool {
	n := d.end - d.start
	if n < preludeLen {
		return false
	}
	total := int(binary.BigEndian.Uint32(d.buf[d.start:]))
	return total >= minMessage && n >= total
}

// Next returns the next message. At a clean end of the source (between
// messages) it returns io.EOF; inside a message ErrTruncated.
func (d *Decoder) Next() (Message, error) {
	if d.err != nil && d.err != io.EOF {
		return Message{}, d.err
	}
	for {
		n := d.end - d.start
		if n >= preludeLen {
			total, err := d.prelude()
			if err != nil {
				d.err = err
				return Message{}, err
			}
			if n >= total {
				m, err := decode(d.buf[d.start : d.start+total])
				if err != nil {
					d.err = err
					return Message{}, err
				}
				d.start += total
				return m, nil
			}
			d.ensure(total)
		} else {
			d.ensure(preludeLen)
		}
		if d.err != nil {
			if d.end > d.start {
				d.err = ErrTruncated
			}
			return Message{}, d.err
		}
		if err := d.fill(); err != nil {
			d.err = err
		}
	}
}

// prelude validates the prelude at start and returns the message length.
func (d *Decoder) prelude() (int, error) {
	p := d.buf[d.start : d.start+preludeLen]
	if crc32.ChecksumIEEE(p[:8]) != binary.BigEndian.Uint32(p[8:]) {
		return 0, ErrPreludeCRC
	}
	total := binary.BigEndian.Uint32(p)
	hlen := binary.BigEndian.Uint32(p[4:])
	if total < minMessage || hlen > maxHeadersLen || uint64(hlen) > uint64(total)-minMessage {
		return 0, ErrBadLength
	}
	if uint64(total) > uint64(d.limit()) {
		return 0, ErrMessageTooLarge
	}
	return int(total), nil
}

// ensure makes room for need bytes from start.
func (d *Decoder) ensure(need int) {
	if d.start > 0 && (d.start == d.end || len(d.buf)-d.start < need) {
		copy(d.buf, d.buf[d.start:d.end])
		d.end -= d.start
		d.start = 0
	}
	if len(d.buf) < need {
		size := max(initialBuf, 2*len(d.buf))
		for size < need {
			size *= 2
		}
		nb := make([]byte, size)
		copy(nb, d.buf[d.start:d.end])
		d.end -= d.start
		d.start = 0
		d.buf = nb
	}
}

// fill reads once (retrying empty reads a bounded number of times).
func (d *Decoder) fill() error {
	if d.src == nil {
		return io.EOF
	}
	if d.end == len(d.buf) {
		d.ensure(len(d.buf) + 1)
	}
	for i := 0; i < maxEmptyReads; i++ {
		n, err := d.src.Read(d.buf[d.end:])
		d.end += n
		if err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
	}
	return io.ErrNoProgress
}

// Decode decodes exactly one message from b (all of it), checking both
// CRCs. The Message's slices point into b.
func Decode(b []byte) (Message, error) {
	if len(b) < minMessage {
		return Message{}, ErrBadLength
	}
	if crc32.ChecksumIEEE(b[:8]) != binary.BigEndian.Uint32(b[8:]) {
		return Message{}, ErrPreludeCRC
	}
	total := binary.BigEndian.Uint32(b)
	hlen := binary.BigEndian.Uint32(b[4:])
	if uint64(total) != uint64(len(b)) || uint64(hlen) > uint64(total)-minMessage {
		return Message{}, ErrBadLength
	}
	return decode(b)
}

// decode checks the message CRC of a message whose prelude is valid and
// parses its headers.
func decode(b []byte) (Message, error) {
	total := len(b)
	if crc32.ChecksumIEEE(b[:total-4]) != binary.BigEndian.Uint32(b[total-4:]) {
		return Message{}, ErrMessageCRC
	}
	hlen := int(binary.BigEndian.Uint32(b[4:]))
	m := Message{Headers: b[preludeLen : preludeLen+hlen : preludeLen+hlen], Payload: b[preludeLen+hlen : total-4 : total-4]}
	err := ForEachHeader(m.Headers, func(name []byte, typ byte, val []byte) {
		if typ != typeString || len(name) < 2 || name[0] != ':' {
			return
		}
		switch string(name) {
		case ":event-type":
			m.EventType = val
		case ":message-type":
			m.MessageType = val
		case ":exception-type":
			m.ExceptionType = val
		case ":content-type":
			m.ContentType = val
		case ":error-code":
			m.ErrorCode = val
		case ":error-message":
			m.ErrorMessage = val
		}
	})
	if err != nil {
		return Message{}, err
	}
	return m, nil
}

// ForEachHeader calls fn for each header of a raw header block with its
// name, value type and value bytes (big-endian integers as sent; for
// strings and byte arrays the content without the length). It reports
// ErrBadHeader for a malformed block.
func ForEachHeader(h []byte, fn func(name []byte, typ byte, val []byte)) error {
	for len(h) > 0 {
		nl := int(h[0])
		if nl == 0 || len(h) < 1+nl+1 {
			return ErrBadHeader
		}
		name := h[1 : 1+nl : 1+nl]
		typ := h[1+nl]
		h = h[2+nl:]
		var size int
		switch typ {
		case typeTrue, typeFalse:
			size = 0
		case typeByte:
			size = 1
		case typeShort:
			size = 2
		case typeInt:
			size = 4
		case typeLong, typeTimestamp:
			size = 8
		case typeUUID:
			size = 16
		case typeBytes, typeString:
			if len(h) < 2 {
				return ErrBadHeader
			}
			size = int(binary.BigEndian.Uint16(h))
			h = h[2:]
		default:
			return ErrBadHeader
		}
		if len(h) < size {
			return ErrBadHeader
		}
		fn(name, typ, h[:size:size])
		h = h[size:]
	}
	return nil
}

// Header is one header for AppendMessage. Only string values are written,
// which is all Bedrock's event streams carry.
type Header struct {
	Name  string
	Value string
}

// AppendMessage appends one encoded message with string headers and
// payload to dst (for mock upstreams and tests).
func AppendMessage(dst []byte, headers []Header, payload []byte) []byte {
	hlen := 0
	for _, h := range headers {
		hlen += 1 + len(h.Name) + 1 + 2 + len(h.Value)
	}
	total := preludeLen + hlen + len(payload) + 4
	n := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, uint32(total))
	dst = binary.BigEndian.AppendUint32(dst, uint32(hlen))
	dst = binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[n:n+8]))
	for _, h := range headers {
		dst = append(dst, byte(len(h.Name)))
		dst = append(dst, h.Name...)
		dst = append(dst, typeString)
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(h.Value)))
		dst = append(dst, h.Value...)
	}
	dst = append(dst, payload...)
	return binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[n:]))
}
