package fuzz

import (
	"encoding/json"
	"strconv"
	"testing"

	"gw/edge/a2a"
)

// FuzzA2ATexts: the guardrail text finder never panics, reads only JSON,
// and a rewrite of every string it found is
// valid JSON in which the finder finds exactly the replacements, in order.
func FuzzA2ATexts(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"parts":[{"kind":"text","text":"a\nb\u00e9"},{"kind":"data","data":{"k":["v",1,{"w":"x"}]}}]}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"kind":"task","artifacts":[{"parts":[{"kind":"text","text":"art"}]}],"status":{"message":{"parts":[{"kind":"text","text":"st"}]}}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"kind":"artifact-update","artifact":{"parts":[{"kind":"text","text":"c"},{"kind":"file","file":{"uri":"u"}}]}}}`,
		`{"result":{"parts":[{"kind":"text","text":"x","kind":"data"}]}}`, `{"result":{"parts":[{"kind":"text"}]}}`, `[]`, `{`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, doc []byte, output bool) {
		var x a2a.Texts
		if !x.Collect(doc, output) {
			return
		}
		if !json.Valid(doc) {
			t.Fatalf("collected from %q, which is not JSON", doc)
		}
		n := x.Len()
		repl := make([][]byte, n)
		for i := range repl {
			repl[i] = []byte("m\"" + strconv.Itoa(i) + "\n")
		}
		out := x.Rewrite(nil, doc, func(i int) ([]byte, bool) { return repl[i], true })
		if !json.Valid(out) {
			t.Fatalf("rewrite of %q is not JSON: %q", doc, out)
		}
		var y a2a.Texts
		if !y.Collect(out, output) || y.Len() != n {
			t.Fatalf("rewrite of %q: found %d texts in %q; want %d", doc, y.Len(), out, n)
		}
		for i := range n {
			if string(y.At(i)) != string(repl[i]) {
				t.Fatalf("rewrite of %q: text %d is %q; want %q", doc, i, y.At(i), repl[i])
			}
		}
	})
}
