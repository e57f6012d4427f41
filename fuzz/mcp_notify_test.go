package fuzz

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"gw/edge/mcp"
	"gw/sse/rawjson"
)

// FuzzMCPCancelled: reading the requestId of a caller's
// notifications/cancelled never panics, and names the same ID gw read
// from the request it cancels (the request written with that ID), so a
// cancellation finds its call whatever the spelling.
func FuzzMCPCancelled(f *testing.F) {
	for _, s := range []string{
		`{"requestId":1,"reason":"user"}`,
		`{"requestId":"abc"}`,
		`{"requestId":"a\u0062c"}`,
		`{"requestId":1.0}`,
		`{"requestId":1e3}`,
		`{"requestId":null}`,
		`{"reason":"x"}`,
		`[]`, `{"requestId":{}}`,
		"{\"requestId\":\"\xff\"}", // CI crasher: json.Valid accepts it, DecodeMessage does not
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		// DecodeMessage hands over params only from a message that
		// passed rawjson.Valid, which (unlike encoding/json) refuses
		// invalid UTF-8.
		if !rawjson.Valid(params) {
			return
		}
		id, err := mcp.CancelledRequestID(params)
		if err != nil {
			return
		}
		var v [1][]byte
		if rawjson.ScanTop(params, []string{"requestId"}, v[:]) != nil {
			t.Fatalf("accepted %q but the requestId cannot be found again", params)
		}
		req := append(append([]byte(`{"jsonrpc":"2.0","id":`), v[0]...), `,"method":"tools/call"}`...)
		msg, err := mcp.DecodeMessage(req)
		if err != nil {
			t.Fatalf("requestId %s accepted, but a request with that id is refused: %v", v[0], err)
		}
		if got := msg.(*jsonrpc.Request).ID; got != id {
			t.Fatalf("requestId %s: cancel names %v, the request was read as %v", v[0], id.Raw(), got.Raw())
		}
	})
}
