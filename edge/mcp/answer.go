package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"gw/sse"
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

// nextMessage returns the data of r's next message event: comments, id and
// retry fields, events without data, named events other than "message" and
// a last event the stream ends without a blank line after are skipped
// (what the SDK's client reads). io.EOF at the stream's end.
func nextMessage(r *sse.Reader) ([]byte, error) {
	for {
		ev, err := r.Next()
		if err != nil {
			if err == sse.ErrEventTooLarge {
				err = errAnswerTooLarge
			}
			return nil, err
		}
		if ev.Unterminated || len(ev.Data) == 0 || (len(ev.Name) > 0 && string(ev.Name) != "message") {
			continue
		}
		return ev.Data, nil
	}
}

// acquireEvents returns a pooled SSE reader of src for one answer stream
// (release with sse.ReleaseReader), bounded like the SDK's client bounds an
// event.
func acquireEvents(src io.Reader) *sse.Reader {
	r := sse.AcquireReader(src)
	r.MaxEventSize = MaxAnswerBytes
	return r
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
	var src io.Reader = bytes.NewReader(body)
	if chunk > 0 {
		src = &pieces{b: body, n: chunk}
	}
	r := acquireEvents(src)
	defer sse.ReleaseReader(r)
	for {
		data, err := nextMessage(r)
		if err == io.EOF {
			return a, errNoAnswer
		}
		if err != nil {
			return a, err
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
				m.result = bytes.Clone(m.result) // data dies with the reader's next read
			}
			return a, finishAnswer(&a, &m)
		}
	}
}

// pieces reads b n bytes at a time, as a body arriving in pieces.
type pieces struct {
	b []byte
	n int
}

func (p *pieces) Read(dst []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	k := copy(dst, p.b[:min(len(p.b), p.n)])
	p.b = p.b[k:]
	return k, nil
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
