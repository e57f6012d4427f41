package guard

import (
	"encoding/json"
	"strings"
	"testing"
)

var roleNames = map[Role]string{RoleUser: "user", RoleSystem: "system", RoleAssistant: "assistant", RoleTool: "tool"}
var partNames = map[Part]string{PartContent: "content", PartReasoning: "reasoning", PartToolArguments: "args", PartToolResult: "result", PartToolKey: "key", PartToolNumber: "num"}

// describe renders the extracted texts as role/part/latest=data lines.
func describe(e *Exec) string {
	var b strings.Builder
	for i, t := range e.Texts() {
		b.WriteString(roleNames[t.Role] + "/" + partNames[t.Part])
		if e.latest[i] {
			b.WriteString("/L")
		}
		if e.fixed[i] {
			b.WriteString("/F")
		}
		b.WriteString("=" + string(t.Data) + "\n")
	}
	return b.String()
}

// TestExtract: every text value of each surface's request and answer,
// judged separately, in document order.
func TestExtract(t *testing.T) {
	f := func(name string, format Format, body, want string) {
		t.Helper()
		var e Exec
		var x Extractor
		if err := x.Extract(&e, format, []byte(body)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := describe(&e); got != want {
			t.Fatalf("%s:\ngot:\n%swant:\n%s", name, got, want)
		}
	}
	f("chat", ChatRequest, `{"model":"m","messages":[
		{"role":"developer","content":"dev rules"},
		{"role":"user","content":[{"type":"text","text":"part \u00e9"},{"type":"image_url","image_url":{"url":"u"}}]},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"city\":\"Paris\",\"n\":3,\"tags\":[\"a\"]}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"{\"temp\":21}"},
		{"role":"tool","tool_call_id":"c2","content":"plain result"},
		{"role":"user","content":"latest"}]}`,
		"system/content=dev rules\nuser/content=part é\nassistant/key=city\nassistant/args=Paris\nassistant/key=n\nassistant/num=3\nassistant/key=tags\nassistant/args=a\n"+
			"tool/key/L=temp\ntool/num/L=21\ntool/result/L=plain result\nuser/content/L=latest\n")
	// The one-pass chat walk: keys spelled with escapes, the role after
	// the content, escaped texts, duplicated members (the last wins, as
	// in rawjson.Get), non-object messages skipped.
	f("chat escapes", ChatRequest, `{"m\u0065ssages":[
		{"content":"a\\b \"q\"","r\u006fle":"assist\u0061nt","reasoning_content":"why\n","refusal":"no"},
		7, "x", [1],
		{"role":"tool","role":"user","c\u006fntent":"plain"}]}`,
		"assistant/content=a\\b \"q\"\nassistant/reasoning=why\n\nassistant/content=no\nuser/content/L=plain\n")
	// Names in another case are the same members, as an upstream on Go's
	// encoding/json reads them (two spellings in one object never get
	// here: the read stage refuses them).
	f("chat names in another case", ChatRequest, `{"MESSAGES":[
		{"Role":"user","Content":"upper"},
		{"ROLE":"user","content":[{"TYPE":"text","Text":"part"}]},
		{"role":"user","\u0043ontent":"escaped"}]}`,
		"user/content/L=upper\nuser/content/L=part\nuser/content/L=escaped\n")
	f("messages names in another case", MessagesRequest, `{"SYSTEM":"sys","Messages":[{"Role":"user","Content":[{"Type":"text","TEXT":"hi"}]}]}`,
		"system/content=sys\nuser/content/L=hi\n")
	f("responses names in another case", ResponsesRequest, `{"Instructions":"be nice","INPUT":[{"Role":"user","Content":"q"}]}`,
		"system/content=be nice\nuser/content/L=q\n")
	f("chat duplicate messages", ChatRequest, `{"messages":[{"role":"user","content":"first"}],"model":"m","messages":[{"role":"user","content":"second"}]}`,
		"user/content/L=second\n")
	f("chat messages last not an array", ChatRequest, `{"messages":[{"role":"user","content":"first"}],"messages":null}`, "")
	f("chat no messages", ChatRequest, `{"model":"m","input":"x"}`, "")
	f("messages", MessagesRequest, `{"model":"m","system":[{"type":"text","text":"sys"}],"messages":[
		{"role":"user","content":"hi"},
		{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"text","text":"ok"},{"type":"tool_use","id":"t","name":"f","input":{"q":"x","k":1.5}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"res"}]},{"type":"text","text":"next"}]}]}`,
		"system/content=sys\nuser/content=hi\nassistant/reasoning/F=hmm\nassistant/content=ok\nassistant/key=q\nassistant/args=x\nassistant/key=k\nassistant/num=1.5\ntool/result/L=res\nuser/content/L=next\n")
	f("responses string", ResponsesRequest, `{"model":"m","instructions":"be nice","input":"hello"}`,
		"system/content=be nice\nuser/content/L=hello\n")
	f("responses items", ResponsesRequest, `{"model":"m","input":[
		{"role":"user","content":"q1"},
		{"type":"function_call","call_id":"c","name":"f","arguments":"{\"a\":\"b\"}"},
		{"type":"function_call_output","call_id":"c","output":"out"},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"q2"}]}]}`,
		"user/content=q1\nassistant/key=a\nassistant/args=b\ntool/result/L=out\nuser/content/L=q2\n")
	f("member order", MessagesRequest, `{"messages":[{"content":"u","role":"user"}],"system":"s"}`,
		"user/content/L=u\nsystem/content=s\n")
	f("chat reasoning after content", ChatRequest, `{"messages":[{"content":"c","reasoning_content":"r","role":"assistant"},{"role":"user","content":"q"}]}`,
		"assistant/content=c\nassistant/reasoning=r\nuser/content/L=q\n")
	f("chat answer", ChatAnswer, `{"choices":[{"index":0,"message":{"role":"assistant","content":"answer","reasoning_content":"why","tool_calls":[{"function":{"name":"f","arguments":"{\"x\":\"y\"}"}}]}}]}`,
		"assistant/content/L=answer\nassistant/reasoning/L=why\nassistant/key/L=x\nassistant/args/L=y\n")
	// An answer's names are read as a Go client reads them, like a
	// request's: "Content" is the content.
	f("chat answer names in another case", ChatAnswer, `{"CHOICES":[{"Message":{"Content":"upper","REASONING_CONTENT":"why","Tool_Calls":[{"Function":{"Arguments":"{\"x\":\"y\"}"}}]}},{"message":{"\u0063ontent":"escaped"}}]}`,
		"assistant/content/L=upper\nassistant/reasoning/L=why\nassistant/key/L=x\nassistant/args/L=y\nassistant/content/L=escaped\n")
	f("messages answer", MessagesAnswer, `{"content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"a"}]}`,
		"assistant/reasoning/L/F=t\nassistant/content/L=a\n")
	f("responses answer", ResponsesAnswer, `{"output":[{"type":"reasoning","summary":[{"type":"summary_text","text":"s"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"o"}]},{"type":"function_call","arguments":"{}"}]}`,
		"assistant/reasoning/L=s\nassistant/content/L=o\n")
}

// TestExtractAnswerTwoSpellings: an answer spelling one name twice in one
// object cannot be judged (ErrFoldedNames; the caller applies the chain's
// fail-open rules); the same names in requests never get here (the read
// stage refuses them), and exact duplicates are read as JSON reads them.
func TestExtractAnswerTwoSpellings(t *testing.T) {
	for _, tc := range []struct {
		f    Format
		body string
		want error
	}{
		{ChatAnswer, `{"choices":[{"message":{"content":"fine","Content":"bad"}}]}`, ErrFoldedNames},
		{ChatAnswer, `{"choices":[{"message":{"content":"fine"}}],"Choices":[]}`, ErrFoldedNames},
		{MessagesAnswer, `{"content":[{"type":"text","text":"a","TEXT":"b"}]}`, ErrFoldedNames},
		{ResponsesAnswer, `{"output":[],"OUTPUT":[]}`, ErrFoldedNames},
		{ChatAnswer, `{"choices":[{"message":{"content":"a","content":"b"}}]}`, nil},
		{ChatAnswer, `{"Choices":[{"Message":{"Content":"one spelling"}}]}`, nil},
	} {
		var e Exec
		var x Extractor
		if err := x.Extract(&e, tc.f, []byte(tc.body)); err != tc.want {
			t.Errorf("Extract(%s) = %v; want %v", tc.body, err, tc.want)
		}
	}
}

// TestRewrite: masks are written back as escaped JSON strings, inside
// nested tool arguments too, and the body stays valid JSON.
func TestRewrite(t *testing.T) {
	f := func(format Format, body string, mask map[string]string, want string) {
		t.Helper()
		var e Exec
		var x Extractor
		if err := x.Extract(&e, format, []byte(body)); err != nil {
			t.Fatal(err)
		}
		e.over = make([][]byte, len(e.Texts()))
		for i, tx := range e.Texts() {
			if m, ok := mask[string(tx.Data)]; ok {
				e.over[i], e.changed[i] = []byte(m), true
			}
		}
		out := x.Rewrite(nil, &e)
		if !json.Valid(out) {
			t.Fatalf("invalid JSON: %s", out)
		}
		if string(out) != want {
			t.Fatalf("got:\n%s\nwant:\n%s", out, want)
		}
	}
	f(ChatRequest, `{"messages":[{"role":"user","content":"mail a@b.c"},{"role":"user","content":"keep"}]}`,
		map[string]string{"mail a@b.c": `mail "[EMAIL]"`},
		`{"messages":[{"role":"user","content":"mail \"[EMAIL]\""},{"role":"user","content":"keep"}]}`)
	f(ChatRequest, `{"messages":[{"role":"assistant","tool_calls":[{"function":{"arguments":"{\"to\":\"a@b.c\",\"n\":42}"}}]}]}`,
		map[string]string{"a@b.c": "[EMAIL]", "42": "[N]"},
		`{"messages":[{"role":"assistant","tool_calls":[{"function":{"arguments":"{\"to\":\"[EMAIL]\",\"n\":\"[N]\"}"}}]}]}`)
	f(MessagesRequest, `{"messages":[{"role":"user","content":[{"type":"tool_result","content":"x\ny"}]}]}`,
		map[string]string{"x\ny": "é"}, `{"messages":[{"role":"user","content":[{"type":"tool_result","content":"é"}]}]}`)
	f(MessagesRequest, `{"messages":[{"content":"a@b","role":"user"}],"system":"a@b sys"}`,
		map[string]string{"a@b": "[E]", "a@b sys": "[E] sys"}, `{"messages":[{"content":"[E]","role":"user"}],"system":"[E] sys"}`)
}
