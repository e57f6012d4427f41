package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// MaxMessageBytes bounds a caller's JSON-RPC message.
const MaxMessageBytes = 4 << 20

// wireMessage is a caller's JSON-RPC message as sent. It is decoded with
// encoding/json rather than the SDK's jsonrpc.DecodeMessage, whose
// streaming decoder allocates a large buffer per message (measured in
// BenchmarkToolsCallViaGW); the rules are the SDK's.
type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *jsonrpc.Error  `json:"error"`
}

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
	var w wireMessage
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	if w.JSONRPC != "2.0" {
		return nil, errors.New(`jsonrpc must be "2.0"`)
	}
	var id jsonrpc.ID
	if len(w.ID) > 0 {
		var err error
		if id, err = decodeID(w.ID); err != nil {
			return nil, err
		}
	}
	if w.Method != nil {
		if *w.Method == "" {
			return nil, errors.New("method must not be empty")
		}
		return &jsonrpc.Request{ID: id, Method: *w.Method, Params: w.Params}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("a message without method is a response and needs an id")
	}
	r := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		r.Error = w.Error
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
