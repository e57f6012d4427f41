package bedrock

import (
	"encoding/base64"
	"errors"
	"io"
	"sync"

	"gw/sse"
	"gw/sse/converse"
	"gw/sse/eventstream"
	"gw/sse/rawjson"
)

// InvokeSource reads an InvokeModelWithResponseStream body of a Claude
// model (the native Messages path, BuildNative) and yields the Anthropic
// Messages events it carries: each `chunk` event's payload is
// {"bytes": "<base64 of one Messages event>", "p": padding}; the decoded
// event is returned as an sse.Event named by its `type` (message_start,
// content_block_delta, ...), its data the event's JSON as Anthropic sent it
// (thinking signatures, citations and unknown fields intact; Bedrock's
// amazon-bedrock-invocationMetrics member of message_stop too).
//
// Exception messages (throttlingException, modelStreamErrorException,
// validationException ...) and unmodeled error messages become a Messages
// `error` event {"type":"error","error":{"type","message"}}; ErrStatus
// then reports the HTTP status the exception stands for (429 for
// throttling ...), so an error before the first content event fails the
// attempt over like that status.
//
// Event bytes are valid until the next call. Steady-state reading does not
// allocate. Not safe for concurrent use.
type InvokeSource struct {
	dec    eventstream.Decoder
	buf    []byte // the decoded event
	errBuf []byte // the error event built from an exception
	status int    // of the last exception; 0 when none
}

// ErrMalformedChunk is returned for a chunk whose payload is not
// {"bytes": base64} holding a JSON object with a string `type`.
var ErrMalformedChunk = errors.New("bedrock: malformed InvokeModelWithResponseStream chunk")

var invokeSourcePool sync.Pool

// AcquireInvokeSource returns a pooled InvokeSource reading body.
func AcquireInvokeSource(body io.Reader) *InvokeSource {
	s, _ := invokeSourcePool.Get().(*InvokeSource)
	if s == nil {
		s = new(InvokeSource)
	}
	s.Reset(body)
	return s
}

// ReleaseInvokeSource returns s to the pool.
func ReleaseInvokeSource(s *InvokeSource) {
	s.Reset(nil)
	if cap(s.buf) > 1<<20 {
		s.buf = nil // one huge event must not pin its buffer in the pool
	}
	invokeSourcePool.Put(s)
}

// Reset makes s read body from the start, keeping its buffers.
func (s *InvokeSource) Reset(body io.Reader) {
	s.dec.Reset(body)
	s.status = 0
}

var (
	strEventError   = []byte("error")
	strChunk        = []byte("chunk")
	chunkKeys       = []string{"bytes"}
	strErrorOpen    = []byte(`{"type":"error","error":{"type":"`)
	strErrorMessage = []byte(`","message":`)
)

// Next returns the next Messages event; io.EOF at a clean end.
func (s *InvokeSource) Next() (sse.Event, error) {
	for {
		m, err := s.dec.Next()
		if err != nil {
			return sse.Event{}, err
		}
		switch string(m.MessageType) {
		case "exception":
			var v [1][]byte
			_ = rawjson.ScanTop(m.Payload, messageKeys, v[:])
			return s.errorEvent(m.ExceptionType, v[0], false), nil
		case "error":
			return s.errorEvent(m.ErrorCode, m.ErrorMessage, true), nil
		}
		if string(m.EventType) != string(strChunk) {
			continue // an event type this API does not define: nothing to relay
		}
		var v [1][]byte
		if rawjson.ScanTop(m.Payload, chunkKeys, v[:]) != nil || rawjson.KindOf(v[0]) != rawjson.String {
			return sse.Event{}, ErrMalformedChunk
		}
		b64 := v[0][1 : len(v[0])-1]
		n := base64.StdEncoding.DecodedLen(len(b64))
		if cap(s.buf) < n {
			s.buf = make([]byte, n)
		}
		n, err = base64.StdEncoding.Decode(s.buf[:n], b64)
		if err != nil {
			return sse.Event{}, ErrMalformedChunk
		}
		data := s.buf[:n]
		typ, kind, ok := rawjson.Get(data, "type")
		if !ok || kind != rawjson.String || len(typ) < 3 {
			return sse.Event{}, ErrMalformedChunk
		}
		return sse.Event{Name: typ[1 : len(typ)-1], Data: data}, nil
	}
}

var messageKeys = []string{"message"}

// errorEvent builds the Messages error event of an exception typ whose
// message is msg (a JSON string literal, or raw text when raw).
func (s *InvokeSource) errorEvent(typ, msg []byte, raw bool) sse.Event {
	status, _ := converse.ExceptionStatus(typ)
	s.status = status
	b := append(s.errBuf[:0], strErrorOpen...)
	b = append(b, MessagesErrorType(status)...)
	b = append(b, strErrorMessage...)
	switch {
	case raw:
		b = rawjson.AppendQuoteBytes(b, msg)
	case rawjson.KindOf(msg) == rawjson.String:
		b = append(b, msg...)
	default:
		b = rawjson.AppendQuoteBytes(b, typ)
	}
	b = append(b, "}}"...)
	s.errBuf = b
	return sse.Event{Name: strEventError, Data: b}
}

// ErrStatus is the HTTP status of the last exception (0 when none).
func (s *InvokeSource) ErrStatus() int { return s.status }

// Pending reports whether a whole message is buffered.
func (s *InvokeSource) Pending() bool { return s.dec.Pending() }

// MessagesErrorType is the Anthropic error type of an HTTP status, as the
// Messages API names its errors.
func MessagesErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 503, 529:
		return "overloaded_error"
	case 504:
		return "timeout_error"
	}
	return "api_error"
}
