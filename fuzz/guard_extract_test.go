package fuzz

import (
	"encoding/json"
	"testing"

	"gw/edge/guard"
)

// FuzzGuardExtract: the request and answer text extractor never panics on
// any valid JSON body, and rewriting every text keeps the body valid JSON.
func FuzzGuardExtract(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"function":{"arguments":"{\"a\":[1,\"x\",{\"k\":true}]}"}}]},{"role":"tool","content":"{\"r\":2}"}]}`,
		`{"system":"s","messages":[{"role":"user","content":[{"type":"text","text":"t"},{"type":"tool_result","content":"x"},{"type":"tool_use","input":{"q":"\u00e9"}}]}]}`,
		`{"instructions":"i","input":[{"role":"user","content":"c"},{"type":"function_call","arguments":"[1,2]"},{"type":"function_call_output","output":"o"}]}`,
		`{"choices":[{"message":{"content":"a","tool_calls":[{"function":{"arguments":"nope"}}]}}]}`,
		`{"content":[{"type":"thinking","thinking":"t"}],"output":[{"type":"message","content":[{"text":"x"}]}]}`,
	} {
		for fm := 0; fm < 6; fm++ {
			f.Add([]byte(s), uint8(fm))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, format uint8) {
		if !json.Valid(body) {
			return
		}
		var e guard.Exec
		var x guard.Extractor
		if err := x.Extract(&e, guard.Format(format%6), body); err != nil {
			return
		}
		for i := range e.Texts() {
			e.Replace(i, []byte("[M] \"q\" \u00e9"))
		}
		out := x.Rewrite(nil, &e)
		if !json.Valid(out) {
			t.Fatalf("rewrite broke the JSON:\n%s\n->\n%s", body, out)
		}
	})
}
