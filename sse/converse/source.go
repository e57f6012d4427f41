package converse

import (
	"io"
	"sync"

	"gw/sse"
	"gw/sse/eventstream"
	"gw/sse/rawjson"
)

// Source reads a ConverseStream body (binary event-stream framing) and
// yields its messages as sse.Event values for ToChatStream: Name is the
// `:event-type` of an event, the `:exception-type` of an exception, or
// "error" for an unmodeled error (then Data is built as {"code", "message"}
// from its :error-code and :error-message headers); Data is the payload.
// Event bytes are valid until the next call. Not safe for concurrent use.
type Source struct {
	dec eventstream.Decoder
	buf []byte
}

var sourcePool sync.Pool

// AcquireSource returns a pooled Source reading body.
func AcquireSource(body io.Reader) *Source {
	s, _ := sourcePool.Get().(*Source)
	if s == nil {
		s = new(Source)
	}
	s.dec.Reset(body)
	return s
}

// ReleaseSource returns s to the pool.
func ReleaseSource(s *Source) {
	s.dec.Reset(nil)
	s.buf = keep(s.buf)
	sourcePool.Put(s)
}

var strError = []byte("error")

// Next returns the next message as an event; io.EOF at a clean end.
func (s *Source) Next() (sse.Event, error) {
	m, err := s.dec.Next()
	if err != nil {
		return sse.Event{}, err
	}
	switch string(m.MessageType) {
	case "exception":
		return sse.Event{Name: m.ExceptionType, Data: m.Payload}, nil
	case "error":
		b := append(s.buf[:0], `{"code":`...)
		b = rawjson.AppendQuoteBytes(b, m.ErrorCode)
		b = append(b, `,"message":`...)
		b = rawjson.AppendQuoteBytes(b, m.ErrorMessage)
		b = append(b, '}')
		s.buf = b
		return sse.Event{Name: strError, Data: b}, nil
	}
	return sse.Event{Name: m.EventType, Data: m.Payload}, nil
}

// Pending reports whether a whole message is buffered.
func (s *Source) Pending() bool { return s.dec.Pending() }
