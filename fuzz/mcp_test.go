package fuzz

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"gw/admin/resources"
	"gw/edge/mcp"
)

// FuzzMCPMessage: the caller's JSON-RPC framing never panics; what it
// accepts re-encodes and decodes to the same kind of message.
func FuzzMCPMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","arguments":{"x":1}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"s","result":{}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"x"}}`,
		` [{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		``, `null`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		msg, err := mcp.DecodeMessage(b)
		if err != nil {
			return
		}
		out, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			return // a response with neither result nor error
		}
		again, err := jsonrpc.DecodeMessage(out)
		if err != nil {
			t.Fatalf("re-encoded %q does not decode: %v", out, err)
		}
		_, isReq := msg.(*jsonrpc.Request)
		if _, againReq := again.(*jsonrpc.Request); isReq != againReq {
			t.Fatalf("kind changed: %q → %q", b, out)
		}
	})
}

// FuzzMCPNames: Split inverts Join for every registered server, picks the
// longest owner, and never resolves a name to a server it does not start with.
func FuzzMCPNames(f *testing.F) {
	f.Add("github", "get_issue", "github__get_issue")
	f.Add("a__b", "c", "a__b__c")
	f.Add("a", "b__c", "a__b__c")
	f.Add("x", "", "x__")
	f.Add("", "y", "__y")
	f.Fuzz(func(t *testing.T, server, tool, name string) {
		servers := []*resources.MCPServer{{Name: server}, {Name: "a"}, {Name: "a__b"}}
		if server != "" && tool != "" {
			s, rest, ok := mcp.Split(mcp.Join(server, tool), servers)
			if !ok {
				t.Fatalf("Join(%q, %q) has no owner", server, tool)
			}
			if mcp.Join(s.Name, rest) != mcp.Join(server, tool) {
				t.Fatalf("Split(Join(%q, %q)) = %q, %q", server, tool, s.Name, rest)
			}
		}
		s, rest, ok := mcp.Split(name, servers)
		if !ok {
			return
		}
		if rest == "" || !strings.HasPrefix(name, s.Name+mcp.Sep) || name[len(s.Name)+len(mcp.Sep):] != rest {
			t.Fatalf("Split(%q) = %q, %q", name, s.Name, rest)
		}
		for _, o := range servers {
			if len(o.Name) > len(s.Name) && strings.HasPrefix(name, o.Name+mcp.Sep) && len(name) > len(o.Name)+len(mcp.Sep) {
				t.Fatalf("Split(%q) chose %q over the longer owner %q", name, s.Name, o.Name)
			}
		}
	})
}
