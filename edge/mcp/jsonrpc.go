package mcp

import (
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// MaxMessageBytes bounds a caller's JSON-RPC message.
const MaxMessageBytes = 4 << 20

// DecodeMessage reads one caller JSON-RPC message (a request, a
// notification or a response) with the SDK's framing rules. Batches are
// refused: the protocol versions gw speaks do not carry them.
func DecodeMessage(b []byte) (jsonrpc.Message, error) {
	if len(b) == 0 {
		return nil, errors.New("empty body")
	}
	if len(b) > MaxMessageBytes {
		return nil, errors.New("message larger than 4 MiB")
	}
	for _, ch := range b {
		if ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' {
			continue
		}
		if ch == '[' {
			return nil, errors.New("JSON-RPC batches are not supported")
		}
		break
	}
	msg, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		return nil, err
	}
	if r, ok := msg.(*jsonrpc.Request); ok && r.Method == "" {
		return nil, errors.New("method must not be empty")
	}
	return msg, nil
}
