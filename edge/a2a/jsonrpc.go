package a2a

import (
	"errors"
	"strconv"

	"gw/sse/rawjson"
)

// Request is the framing of one JSON-RPC 2.0 request: what gw needs to
// route, classify and answer it. Slices alias the body.
type Request struct {
	Method []byte // unquoted method name (A2A method names hold no escapes)
	ID     []byte // the raw id (string, number or null); nil for a notification
}

// JSON-RPC error codes gw answers itself (JSON-RPC 2.0 section 5.1).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
)

// Framing errors: their code and caller-safe message.
var (
	ErrParse   = errors.New("request body is not valid JSON")
	ErrInvalid = errors.New("request is not a JSON-RPC 2.0 request object (jsonrpc \"2.0\", a string method, an id that is a string, number or null)")
)

// ParseRequest reads the framing of a JSON-RPC 2.0 request body. Batches
// are not part of A2A and are refused as invalid.
func ParseRequest(body []byte) (Request, error) {
	var r Request
	if valid, folded := rawjson.ValidNames(body); !valid {
		return r, ErrParse
	} else if folded != nil {
		return r, rawjson.Folded(folded)
	}
	if rawjson.KindOf(body) != rawjson.Object {
		return r, ErrInvalid
	}
	var vals [3][]byte
	if err := rawjson.ScanTop(body, frameKeys[:], vals[:]); err != nil {
		return r, ErrInvalid
	}
	if !rawjson.StringEquals(vals[0], "2.0") {
		return r, ErrInvalid
	}
	m := vals[1]
	if rawjson.KindOf(m) != rawjson.String || len(m) < 3 {
		return r, ErrInvalid
	}
	for _, b := range m[1 : len(m)-1] {
		if b == '\\' || b < 0x20 {
			return r, ErrInvalid
		}
	}
	r.Method = m[1 : len(m)-1]
	if id := vals[2]; id != nil {
		switch rawjson.KindOf(id) {
		case rawjson.String, rawjson.Number, rawjson.Null:
			r.ID = id
		default:
			return Request{}, ErrInvalid
		}
	}
	return r, nil
}

var frameKeys = [3]string{"jsonrpc", "method", "id"}

// AppendError appends a JSON-RPC error response with id (raw; nil means
// null), code and message.
func AppendError(dst, id []byte, code int, message string) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	if len(id) == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, id...)
	}
	dst = append(dst, `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, `,"message":`...)
	dst = rawjson.AppendQuote(dst, message)
	return append(dst, "}}"...)
}

// AppendErrorData appends a JSON-RPC error response as AppendError does,
// with error.data {"code": name}: gw's own refusals (a guardrail, a rate
// limit) carry the code gw's envelope gives them.
func AppendErrorData(dst, id []byte, code int, message, name string) []byte {
	dst = AppendError(dst, id, code, message)
	dst = append(dst[:len(dst)-2], `,"data":{"code":`...)
	dst = rawjson.AppendQuote(dst, name)
	return append(dst, "}}}"...)
}

// Methods whose answer is an SSE stream (A2A "message/stream",
// "tasks/resubscribe").
func streaming(method []byte) bool {
	return string(method) == MethodStream || string(method) == MethodResubscribe
}

// A2A methods named in records and metrics; others are recorded as
// OperationOther (a method name is caller input: never a label as is).
const (
	MethodSend        = "message/send"
	MethodStream      = "message/stream"
	MethodGetTask     = "tasks/get"
	MethodCancelTask  = "tasks/cancel"
	MethodResubscribe = "tasks/resubscribe"
	OperationCard     = "agent/card"
	OperationOther    = "other"
)

var knownMethods = [...]string{MethodSend, MethodStream, MethodGetTask, MethodCancelTask, MethodResubscribe}

// operation is the record's operation for method: the known constant, or
// OperationOther.
func operation(method []byte) string {
	for _, m := range knownMethods {
		if string(method) == m {
			return m
		}
	}
	return OperationOther
}
