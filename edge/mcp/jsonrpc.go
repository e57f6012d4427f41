package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"gw/sse/rawjson"
)

// MaxMessageBytes bounds a caller's JSON-RPC message.
const MaxMessageBytes = 4 << 20

// messageKeys are the members of a JSON-RPC message gw reads. A caller's
// message is validated whole and then read with sse/rawjson (one pass, no
// reflection) rather than the SDK's jsonrpc.DecodeMessage, whose streaming
// decoder allocates a large buffer per message (measured in
// BenchmarkToolsCallViaGW); the rules are the SDK's, member names exact as
// JSON-RPC writes them.
var messageKeys = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// DecodeMessage reads one caller JSON-RPC message: a request, a
// notification (no id) or a response. Batches are refused: the protocol
// versions gw speaks do not carry them.
func DecodeMessage(b []byte) (jsonrpc.Message, error) {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0:
		return nil, errors.New("empty body")
	case len(b) > MaxMessageBytes:
		return nil, errors.New("message larger than 4 MiB")
	case b[0] == '[':
		return nil, errors.New("JSON-RPC batches are not supported")
	case b[0] != '{':
		return nil, errors.New("a JSON-RPC message is a JSON object")
	}
	if valid, folded := rawjson.ValidNames(b); !valid {
		return nil, errors.New("the message is not valid JSON")
	} else if folded != nil {
		// Two spellings of one name ("name" and "Name" in tools/call): a
		// server on Go's encoding/json reads the last, gw's policy might
		// not (docs/PROXY.md, request handling).
		return nil, rawjson.Folded(folded)
	}
	var vals [6][]byte
	if err := rawjson.ScanTop(b, messageKeys, vals[:]); err != nil {
		return nil, err
	}
	rawVersion, rawID, rawMethod, params, result, rawErr := vals[0], vals[1], vals[2], vals[3], vals[4], vals[5]
	if !rawjson.StringEquals(rawVersion, "2.0") {
		return nil, errors.New(`jsonrpc must be "2.0"`)
	}
	if rawjson.KindOf(rawID) == rawjson.Null {
		rawID = nil
	}
	var id jsonrpc.ID
	if len(rawID) > 0 {
		var err error
		if id, err = decodeID(rawID); err != nil {
			return nil, err
		}
	}
	if rawjson.KindOf(params) == rawjson.Null {
		params = nil
	}
	if len(rawMethod) > 0 && rawjson.KindOf(rawMethod) != rawjson.Null {
		if rawjson.KindOf(rawMethod) != rawjson.String {
			return nil, errors.New("method must be a string")
		}
		m, err := rawjson.AppendUnquote(nil, rawMethod)
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, errors.New("method must not be empty")
		}
		return &jsonrpc.Request{ID: id, Method: string(m), Params: json.RawMessage(params)}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("a message without method is a response and needs an id")
	}
	r := &jsonrpc.Response{ID: id}
	if rawjson.KindOf(result) != rawjson.Null {
		r.Result = json.RawMessage(result)
	}
	if len(rawErr) > 0 && rawjson.KindOf(rawErr) != rawjson.Null {
		var we jsonrpc.Error
		if err := json.Unmarshal(rawErr, &we); err != nil {
			return nil, errors.New("cannot read the error member: " + err.Error())
		}
		r.Error = &we
	}
	return r, nil
}

// decodeID reads a JSON-RPC id: an integer or a plain string directly, the
// rest (escapes, fractions, exponents, null) by the SDK's rules.
func decodeID(raw json.RawMessage) (jsonrpc.ID, error) {
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return jsonrpc.MakeID(float64(n)) // the SDK reads numbers as float64 too
	}
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw[1:len(raw)-1], '\\') < 0 && bytes.IndexByte(raw[1:len(raw)-1], '"') < 0 && utf8.Valid(raw) && noControl(raw) {
		return jsonrpc.MakeID(string(raw[1 : len(raw)-1]))
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return jsonrpc.ID{}, err
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		return jsonrpc.ID{}, errors.New("id must be a string, a number or null")
	}
	return id, nil
}

func noControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return false
		}
	}
	return true
}
