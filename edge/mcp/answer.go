package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"gw/sse/rawjson"
)

// Answers of an upstream server to gw's own tools/call (lean.go): one
// JSON-RPC message (application/json), or an SSE stream of messages
// (text/event-stream) in which the server's requests and notifications for
// the call come before the answer. The result is kept raw: it is checked,
// not decoded, unless a guardrail reads it.

// MaxAnswerBytes bounds one answer message of an upstream (a JSON body or
// one SSE event), as the SDK's client bounds an SSE event.
const MaxAnswerBytes = 16 << 20

var (
	errAnswerTooLarge = errors.New("the answer is larger than 16 MiB")
	errNotJSON        = errors.New("the answer is not valid JSON")
	errNoAnswer       = errors.New("the answer stream ended without the answer")
)

// EventScanner splits an SSE body into its message events as the body
// arrives (https://html.spec.whatwg.org/multipage/server-sent-events.html):
// lines end with CRLF, LF or CR; data lines are joined with LF; comments,
// id and retry fields are skipped, as are events without data and named
// events other than "message" (what the SDK's client reads). Partial lines
// stay in its buffer between reads. The zero value is ready to use.
type EventScanner struct {
	buf     []byte
	pos     int  // next unread byte of buf
	evStart int  // first byte of the event being read
	skipLF  bool // the last line ended with CR at the end of buf: a LF next is part of it
	other   bool // the event is named, and not "message"
	hasData bool // the event has a data line
	ds, de  int  // the span of its first data line
	multi   bool // several data lines: joined in join
	join    []byte
}

// Feed appends body bytes.
func (s *EventScanner) Feed(p []byte) {
	s.compact()
	s.buf = append(s.buf, p...)
}

// space returns free room at the end of the buffer (at least 4 KiB) to
// read into; wrote(n) takes n bytes of it.
func (s *EventScanner) space() []byte {
	s.compact()
	if cap(s.buf)-len(s.buf) < 4<<10 {
		s.buf = slices.Grow(s.buf, max(4<<10, len(s.buf)))
	}
	return s.buf[len(s.buf):cap(s.buf)]
}

func (s *EventScanner) wrote(n int) { s.buf = s.buf[:len(s.buf)+n] }

// compact drops the events already read from the buffer.
func (s *EventScanner) compact() {
	if s.evStart == 0 {
		return
	}
	n := copy(s.buf, s.buf[s.evStart:])
	d := s.evStart
	s.buf = s.buf[:n]
	s.pos -= d
	if s.hasData && !s.multi {
		s.ds -= d
		s.de -= d
	}
	s.evStart = 0
}

// reset starts a new event at s.pos.
func (s *EventScanner) reset() {
	s.evStart = s.pos
	s.other, s.multi, s.hasData = false, false, false
	s.join = s.join[:0]
}

// Next returns the data of the next complete message event; ok is false
// when more bytes are needed. data is valid until the next call of a
// method of s. An event larger than MaxAnswerBytes is an error.
func (s *EventScanner) Next() (data []byte, ok bool, err error) {
	s.compact()
	for {
		if s.skipLF {
			if s.pos == len(s.buf) {
				return nil, false, nil
			}
			if s.buf[s.pos] == '\n' {
				s.pos++
			}
			s.skipLF = false
		}
		rest := s.buf[s.pos:]
		i := bytes.IndexByte(rest, '\n')
		lim := rest
		if i >= 0 {
			lim = rest[:i]
		}
		if j := bytes.IndexByte(lim, '\r'); j >= 0 {
			i = j
		}
		if i < 0 {
			if len(s.buf)-s.evStart > MaxAnswerBytes {
				return nil, false, errAnswerTooLarge
			}
			return nil, false, nil
		}
		start := s.pos
		line := rest[:i]
		s.pos += i + 1
		if rest[i] == '\r' {
			if s.pos < len(s.buf) {
				if s.buf[s.pos] == '\n' {
					s.pos++
				}
			} else {
				s.skipLF = true
			}
		}
		if len(line) == 0 {
			// The end of an event: dispatch it.
			data, ok := s.data()
			s.reset()
			if ok {
				return data, true, nil
			}
			continue
		}
		if s.pos-s.evStart > MaxAnswerBytes {
			return nil, false, errAnswerTooLarge
		}
		if line[0] == ':' {
			continue // a comment
		}
		name, value := line, line[len(line):]
		if c := bytes.IndexByte(line, ':'); c >= 0 {
			name, value = line[:c], line[c+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(name) {
		case "data":
			vs := start + (len(line) - len(value))
			switch {
			case !s.hasData:
				s.hasData, s.ds, s.de = true, vs, vs+len(value)
			case !s.multi:
				s.multi = true
				s.join = append(append(append(s.join[:0], s.buf[s.ds:s.de]...), '\n'), value...)
			default:
				s.join = append(append(s.join, '\n'), value...)
			}
		case "event":
			v := bytes.TrimSpace(value)
			s.other = len(v) > 0 && string(v) != "message"
		}
	}
}

// data is the current event's data, if it is a message event with some.
func (s *EventScanner) data() ([]byte, bool) {
	if s.other || !s.hasData {
		return nil, false
	}
	d := s.buf[s.ds:s.de:s.de]
	if s.multi {
		d = s.join
	}
	return d, len(d) > 0
}

// Kinds of upstream messages met while waiting for an answer.
const (
	msgAnswer = iota // the answer to gw's call: a result or an error
	msgServer        // a request or notification of the server
	msgOther         // a response to another request (dropped)
)

var answerKeys = []string{"jsonrpc", "id", "method", "result", "error"}

// upMessage is one upstream message as the lean path reads it.
type upMessage struct {
	kind   int
	result []byte         // the raw result (msgAnswer); aliases the message
	err    *jsonrpc.Error // the error answered instead (msgAnswer)
}

// readMessage reads one JSON-RPC message of an upstream (validated whole,
// like a caller's) and tells whether it answers the call id.
func readMessage(msg, id []byte, m *upMessage) error {
	*m = upMessage{}
	if !rawjson.Valid(msg) {
		return errNotJSON
	}
	var v [5][]byte
	if err := rawjson.ScanTop(msg, answerKeys, v[:]); err != nil {
		return errors.New("a JSON-RPC message is a JSON object")
	}
	if !rawjson.StringEquals(v[0], "2.0") {
		return errors.New(`jsonrpc must be "2.0"`)
	}
	if k := rawjson.KindOf(v[2]); k != rawjson.Invalid && k != rawjson.Null {
		m.kind = msgServer
		return nil
	}
	if !idEquals(v[1], id) {
		m.kind = msgOther
		return nil
	}
	m.kind = msgAnswer
	if e := v[4]; len(e) > 0 && rawjson.KindOf(e) != rawjson.Null {
		var we jsonrpc.Error
		if err := json.Unmarshal(e, &we); err != nil {
			return errors.New("cannot read the error member: " + err.Error())
		}
		m.err = &we
		return nil
	}
	if k := rawjson.KindOf(v[3]); k == rawjson.Invalid || k == rawjson.Null {
		return errors.New("the answer has neither result nor error")
	}
	m.result = v[3]
	return nil
}

// idEquals reports whether the raw JSON-RPC id raw is the string id.
func idEquals(raw, id []byte) bool {
	if rawjson.KindOf(raw) != rawjson.String {
		return false
	}
	if len(raw) == len(id)+2 && string(raw[1:len(raw)-1]) == string(id) {
		return true // Fast path - as gw wrote it
	}
	return bytes.IndexByte(raw, '\\') >= 0 && rawjson.StringEquals(raw, string(id))
}

// plainResult reports whether raw (valid JSON) is the common result
// {"content":[{"type":"text","text":"..."},...]} with an optional boolean
// "isError", each member once and spelled plainly, and that isError. Such a
// result means what the SDK reads it as; anything else is read by the SDK.
func plainResult(raw []byte) (plain, isError bool) {
	var seenContent, seenError bool
	ok := true
	err := rawjson.ForEachKey(raw, func(key, val []byte, kind rawjson.Kind) bool {
		switch string(key) {
		case `"content"`:
			if seenContent || kind != rawjson.Array || !plainContent(val) {
				ok = false
			}
			seenContent = true
		case `"isError"`:
			if seenError || kind != rawjson.True && kind != rawjson.False {
				ok = false
			}
			seenError, isError = true, kind == rawjson.True
		default:
			ok = false
		}
		return ok
	})
	return ok && err == nil && seenContent, isError
}

// plainContent reports whether arr holds text blocks only:
// {"type":"text","text":"..."} with no other member.
func plainContent(arr []byte) bool {
	ok := true
	err := rawjson.ForEachElem(arr, func(_ int, el []byte, kind rawjson.Kind) bool {
		if kind != rawjson.Object {
			ok = false
			return false
		}
		var typ, text int
		err := rawjson.ForEachKey(el, func(key, val []byte, kind rawjson.Kind) bool {
			switch string(key) {
			case `"type"`:
				typ++
				ok = ok && string(val) == `"text"`
			case `"text"`:
				text++
				ok = ok && kind == rawjson.String
			default:
				ok = false
			}
			return ok
		})
		ok = ok && err == nil && typ == 1 && text == 1
		return ok
	})
	return ok && err == nil
}

// readResult checks a raw tool result: the plain shape in one pass, any
// other by the SDK's rules (decoded into sdk.CallToolResult, which is
// returned). With decode (a guardrail reads the result) it is always
// decoded.
func readResult(raw []byte, decode bool) (res *sdk.CallToolResult, isError bool, err error) {
	if !decode {
		if plain, isErr := plainResult(raw); plain {
			return nil, isErr, nil
		}
	}
	res = new(sdk.CallToolResult)
	if err := json.Unmarshal(raw, res); err != nil {
		return nil, false, errors.New("cannot read the tool result: " + err.Error())
	}
	return res, res.IsError, nil
}

// CallAnswer is what a whole answer body says (ParseCallAnswer).
type CallAnswer struct {
	Result   []byte         // the raw result; nil with Err
	IsError  bool           // the result's isError
	Plain    bool           // the result was checked in one pass, not decoded
	Err      *jsonrpc.Error // the JSON-RPC error answered instead
	Messages int            // server messages before the answer (SSE)
}

// ParseCallAnswer reads a whole answer body to the call id (contentType
// "application/json" or "text/event-stream") with the code the lean path
// runs on bytes as they arrive, an SSE body fed in pieces of chunk bytes
// (0: at once). It is the fuzz target's entry (fuzz/mcp_answer_test.go).
func ParseCallAnswer(contentType string, body []byte, id string, chunk int) (CallAnswer, error) {
	var a CallAnswer
	var m upMessage
	idb := []byte(id)
	if contentType == "application/json" {
		if len(body) > MaxAnswerBytes {
			return a, errAnswerTooLarge
		}
		if err := readMessage(body, idb, &m); err != nil {
			return a, err
		}
		if m.kind != msgAnswer {
			return a, errors.New("the JSON answer is not the answer to the call")
		}
		return a, finishAnswer(&a, &m)
	}
	var s EventScanner
	for {
		data, ok, err := s.Next()
		if err != nil {
			return a, err
		}
		if !ok {
			if len(body) == 0 {
				return a, errNoAnswer
			}
			n := len(body)
			if chunk > 0 {
				n = min(n, chunk)
			}
			s.Feed(body[:n])
			body = body[n:]
			continue
		}
		if err := readMessage(data, idb, &m); err != nil {
			return a, err
		}
		switch m.kind {
		case msgServer:
			if _, err := DecodeMessage(data); err != nil {
				return a, err
			}
			a.Messages++
		case msgAnswer:
			if m.result != nil {
				m.result = bytes.Clone(m.result) // data dies with the scanner's next read
			}
			return a, finishAnswer(&a, &m)
		}
	}
}

func finishAnswer(a *CallAnswer, m *upMessage) error {
	if m.err != nil {
		a.Err = m.err
		return nil
	}
	res, isErr, err := readResult(m.result, false)
	if err != nil {
		return err
	}
	a.Result, a.IsError, a.Plain = m.result, isErr, res == nil
	return nil
}
