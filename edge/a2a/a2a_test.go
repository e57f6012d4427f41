package a2a

import (
	"encoding/json"
	"testing"
)

func TestParseRequest(t *testing.T) {
	f := func(body, method, id string, want error) {
		t.Helper()
		r, err := ParseRequest([]byte(body))
		if err != want || string(r.Method) != method || string(r.ID) != id {
			t.Fatalf("ParseRequest(%s) = %q %q %v; want %q %q %v", body, r.Method, r.ID, err, method, id, want)
		}
	}
	f(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`, "message/send", "1", nil)
	f(`{"method":"message/stream","id":"a-1","jsonrpc":"2.0"}`, "message/stream", `"a-1"`, nil)
	f(`{"jsonrpc":"2.0","method":"tasks/get"}`, "tasks/get", "", nil) // a notification
	f(`{"jsonrpc":"2.0","id":null,"method":"x"}`, "x", "null", nil)
	f(`{"jsonrpc":"2.0","id":{},"method":"x"}`, "", "", ErrInvalid)
	f(`{"jsonrpc":"2.0","id":1,"method":5}`, "", "", ErrInvalid)
	f(`{"jsonrpc":"2.0","id":1,"method":"a\u002fb"}`, "", "", ErrInvalid) // escapes are refused, not guessed
	f(`{"jsonrpc":"1.0","id":1,"method":"x"}`, "", "", ErrInvalid)
	f(`[{"jsonrpc":"2.0","id":1,"method":"x"}]`, "", "", ErrInvalid)
	f(`{"jsonrpc":"2.0",`, "", "", ErrParse)
}

func TestOperation(t *testing.T) {
	for in, want := range map[string]string{"message/send": MethodSend, "message/stream": MethodStream, "tasks/cancel": MethodCancelTask, "evil\"label": OperationOther} {
		if got := operation([]byte(in)); got != want {
			t.Fatalf("operation(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestAppendError(t *testing.T) {
	got := string(AppendError(nil, []byte(`"r-1"`), CodeInvalidRequest, `bad "x"`))
	if want := `{"jsonrpc":"2.0","id":"r-1","error":{"code":-32600,"message":"bad \"x\""}}`; got != want {
		t.Fatalf("got %s; want %s", got, want)
	}
	if got := string(AppendError(nil, nil, CodeParseError, "p")); got != `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"p"}}` {
		t.Fatal(got)
	}
}

func TestRewriteCard(t *testing.T) {
	const gw = "https://gw.example/a2a/echo"
	out, err := RewriteCard(nil, []byte(`{"name":"Echo","url":"http://10.0.0.5:9000/","additionalInterfaces":[{"url":"http://10.0.0.5:9000/","transport":"JSONRPC"},{"url":"grpc://10.0.0.5:9001","transport":"GRPC"}],`+
		`"securitySchemes":{"k":{"type":"apiKey","in":"header","name":"x-k"}},"security":[{"k":[]}],"supportsAuthenticatedExtendedCard":true,"skills":[{"id":"s"}]}`), gw)
	if err != nil {
		t.Fatal(err)
	}
	var card struct {
		Name       string                            `json:"name"`
		URL        string                            `json:"url"`
		Transport  string                            `json:"preferredTransport"`
		Interfaces []struct{ URL, Transport string } `json:"additionalInterfaces"`
		Schemes    map[string]any                    `json:"securitySchemes"`
		Security   []map[string][]string             `json:"security"`
		Extended   bool                              `json:"supportsAuthenticatedExtendedCard"`
		Skills     []map[string]string               `json:"skills"`
	}
	if err := json.Unmarshal(out, &card); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if card.Name != "Echo" || card.URL != gw || card.Transport != "JSONRPC" || len(card.Interfaces) != 1 || card.Interfaces[0].URL != gw ||
		card.Schemes["gw"] == nil || card.Schemes["k"] != nil || len(card.Security) != 1 || card.Extended || len(card.Skills) != 1 {
		t.Fatalf("card: %s", out)
	}
	// Names that differ only in case (or by a Unicode fold) go: Go's
	// encoding/json would read them as the rewritten members, the agent's
	// address and security winning when they come last.
	out, err = RewriteCard(nil, []byte(`{"url":"http://10.0.0.5/","URL":"http://10.0.0.5/","AdditionalInterfaces":[{"url":"http://10.0.0.5/"}],`+
		`"\u0053ecurity":[{"k":[]}],"\u017fecurity":[{"k":[]}],"SecuritySchemes":{"k":{}},"name":"Echo"}`), gw)
	if err != nil {
		t.Fatal(err)
	}
	card.Interfaces, card.Security, card.Schemes = nil, nil, nil
	if err := json.Unmarshal(out, &card); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if card.URL != gw || card.Interfaces != nil || len(card.Security) != 1 || card.Security[0]["gw"] == nil || card.Schemes["k"] != nil || card.Name != "Echo" {
		t.Fatalf("case-folded names kept: %s", out)
	}
	for _, bad := range []string{`[]`, `"x"`, `{`, ``} {
		if _, err := RewriteCard(nil, []byte(bad), gw); err != ErrCard {
			t.Fatalf("%q: err %v", bad, err)
		}
	}
}

func TestSplit(t *testing.T) {
	f := func(path, name, rest string) {
		t.Helper()
		n, r := split([]byte(path))
		if string(n) != name || string(r) != rest {
			t.Fatalf("split(%q) = %q %q; want %q %q", path, n, r, name, rest)
		}
	}
	f("/a2a", "", "")
	f("/a2a/", "", "")
	f("/a2a/echo", "echo", "")
	f("/a2a/echo/.well-known/agent-card.json", "echo", "/.well-known/agent-card.json")
}
