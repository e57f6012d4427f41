package fuzz

import (
	"bytes"
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"gw/edge/mcp"
	"gw/sse/rawjson"
)

// FuzzMCPCallAnswer: reading an upstream's answer to gw's tools/call (a
// JSON body or an SSE stream, edge/mcp/answer.go) never panics; an SSE
// body fed in pieces reads as fed whole; an accepted result is valid JSON
// that the SDK's client reads too (the one-pass check of the plain text
// shape agrees with the SDK on it and on isError), so what gw relays raw
// is what the SDK path would have accepted.
func FuzzMCPCallAnswer(f *testing.F) {
	for _, s := range []struct {
		body string
		sse  bool
	}{
		{`{"jsonrpc":"2.0","id":"gw-call-1","result":{"content":[{"type":"text","text":"hi"}]}}`, false},
		{`{"jsonrpc":"2.0","id":"gw-call-1","result":{"content":[{"type":"text","text":"a\"b\u00e9"}],"isError":true}}`, false},
		{`{"jsonrpc":"2.0","id":"gw-call-1","result":{"content":[{"type":"image","data":"AQI=","mimeType":"image/png"}],"structuredContent":{"n":1}}}`, false},
		{`{"jsonrpc":"2.0","id":"gw-\u0063all-1","result":{"content":[]}}`, false},
		{`{"jsonrpc":"2.0","id":"gw-call-1","error":{"code":-32602,"message":"bad"}}`, false},
		{`{"jsonrpc":"2.0","id":"gw-call-1","result":{"content":[{"type":"bogus"}]}}`, false},
		{`{"jsonrpc":"2.0","id":"gw-call-1","result":{"content":[{"type":"text","text":"x","type":"text"}]}}`, false},
		{`{"jsonrpc":"2.0","id":"gw-call-1","result":{"Content":[{"type":"text","text":"x"}],"isError":1}}`, false},
		{"{\"jsonrpc\":\"2.0\",\"id\":\"gw-call-1\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}}", false},
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"gw-call-1\",\"result\":{\"content\":[]}}\n\n", true},
		{"id: 0_1\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":1}}\r\n\r\n" +
			": keep-alive\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"gw-call-1\",\r\ndata: \"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}],\"isError\":false}}\r\r", true},
		{"data: {\"jsonrpc\":\"2.0\",\"id\":\"gw-1\",\"method\":\"sampling/createMessage\",\"params\":{\"messages\":[],\"maxTokens\":5}}\n\n" +
			"event: other\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"gw-call-1\",\"result\":{}}\n\n" +
			"data:{\"jsonrpc\":\"2.0\",\"id\":\"gw-call-1\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\"}]}}\n\n", true},
		{"data: {\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}\n\ndata: {oops\n\n", true},
		{"retry: 10\ndata\n\n", true},
	} {
		f.Add([]byte(s.body), s.sse, uint8(3))
	}
	f.Fuzz(func(t *testing.T, body []byte, sse bool, chunk uint8) {
		ct := "application/json"
		if sse {
			ct = "text/event-stream"
		}
		whole, err := mcp.ParseCallAnswer(ct, body, "gw-call-1", 0)
		pieces, err2 := mcp.ParseCallAnswer(ct, body, "gw-call-1", int(chunk)+1)
		if (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
			t.Fatalf("fed whole: %v; in pieces of %d: %v", err, int(chunk)+1, err2)
		}
		if err != nil {
			return
		}
		if !bytes.Equal(whole.Result, pieces.Result) || whole.IsError != pieces.IsError || whole.Plain != pieces.Plain ||
			whole.Messages != pieces.Messages || (whole.Err == nil) != (pieces.Err == nil) {
			t.Fatalf("fed whole: %+v; in pieces: %+v", whole, pieces)
		}
		if whole.Err != nil {
			return
		}
		if !rawjson.Valid(whole.Result) {
			t.Fatalf("accepted a result that is not valid JSON: %q", whole.Result)
		}
		var res sdk.CallToolResult
		if err := json.Unmarshal(whole.Result, &res); err != nil {
			t.Fatalf("accepted %q (plain %v), the SDK refuses it: %v", whole.Result, whole.Plain, err)
		}
		if res.IsError != whole.IsError {
			t.Fatalf("%q: isError %v, the SDK reads %v", whole.Result, whole.IsError, res.IsError)
		}
		if whole.Plain {
			for _, c := range res.Content {
				if _, ok := c.(*sdk.TextContent); !ok {
					t.Fatalf("%q read as plain text, the SDK reads a %T", whole.Result, c)
				}
			}
		}
	})
}
