package a2a

import (
	"strings"
	"testing"
)

func TestTexts(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		input     bool
		want      string // judged texts joined with |
	}{
		{"input parts", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"parts":[{"kind":"text","text":"a\nb"},{"kind":"file","file":{"uri":"x"}},{"kind":"data","data":{"k":["v",1,{"w":"x"}]}}]}}}`, true, "a\nb|v|x"},
		{"no message", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t"}}`, true, ""},
		{"message result", `{"jsonrpc":"2.0","id":1,"result":{"kind":"message","parts":[{"kind":"text","text":"hi"}]}}`, false, "hi"},
		{"task result", `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","history":[{"parts":[{"kind":"text","text":"user"}]}],"artifacts":[{"parts":[{"kind":"text","text":"art"}]}],"status":{"message":{"parts":[{"kind":"text","text":"st"}]}}}}`, false, "art|st"},
		{"artifact update", `{"jsonrpc":"2.0","id":1,"result":{"kind":"artifact-update","artifact":{"parts":[{"kind":"text","text":"chunk"}]}}}`, false, "chunk"},
		{"error", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}`, false, ""},
	} {
		var tx texts
		doc := []byte(tc.doc)
		if tc.input {
			tx.input(doc)
		} else {
			tx.output(doc)
		}
		var got []string
		for _, s := range tx.spans {
			got = append(got, string(tx.buf[s.bs:s.be]))
			if doc[s.off] != '"' || doc[s.end-1] != '"' {
				t.Fatalf("%s: span %v is not a string", tc.name, s)
			}
		}
		if tx.bad || strings.Join(got, "|") != tc.want {
			t.Fatalf("%s: got %q bad %v; want %q", tc.name, got, tx.bad, tc.want)
		}
	}
}

func TestTextsRewrite(t *testing.T) {
	doc := []byte(`{"jsonrpc":"2.0","id":1,"result":{"kind":"task","artifacts":[{"parts":[{"kind":"text","text":"mail a@b.c"}]}],"status":{"message":{"parts":[{"kind":"data","data":{"to":"x@y.z","n":1}}]}}}}`)
	var x Texts
	if !x.Collect(doc, true) || x.Len() != 2 {
		t.Fatalf("collect: %d", x.Len())
	}
	out := x.Rewrite(nil, doc, func(i int) ([]byte, bool) { return []byte(`[EMAIL "` + string(rune('0'+i)) + `"]`), i == 1 })
	want := `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","artifacts":[{"parts":[{"kind":"text","text":"mail a@b.c"}]}],"status":{"message":{"parts":[{"kind":"data","data":{"to":"[EMAIL \"1\"]","n":1}}]}}}}`
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	if x.Collect([]byte(`{"result":`), true) {
		t.Fatal("collected from malformed JSON")
	}
}

// BenchmarkTextsCollect: finding the judged text of one streamed artifact
// event (done for every event of a guarded stream).
func BenchmarkTextsCollect(b *testing.B) {
	doc := []byte(`{"jsonrpc":"2.0","id":"s-1","result":{"kind":"artifact-update","taskId":"t-1","contextId":"c-1","artifact":{"artifactId":"a-1","parts":[{"kind":"text","text":"the agent's answer, one chunk of it, with an escape \" in it"}]}}}`)
	var x Texts
	b.ReportAllocs()
	for b.Loop() {
		if !x.Collect(doc, true) || x.Len() != 1 {
			b.Fatal("no text")
		}
	}
}
