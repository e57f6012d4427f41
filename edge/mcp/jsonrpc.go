package mcp

import (
	"bytes"
	"encoding/json"
	"errors"

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
		var v any
		if err := json.Unmarshal(w.ID, &v); err != nil {
			return nil, err
		}
		var err error
		if id, err = jsonrpc.MakeID(v); err != nil {
			return nil, errors.New("id must be a string, a number or null")
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
