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
