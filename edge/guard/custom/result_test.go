package custom_test

import (
	"errors"
	"strings"
	"testing"

	"gw/edge/guard"
	"gw/edge/guard/custom"
)

func TestDecodeResult(t *testing.T) {
	texts := []guard.Text{{Data: []byte("a")}, {Data: []byte("b😀")}, {Data: []byte("c")}}
	ok := func(enc string, action guard.Action, rule, msg string, masks ...string) {
		t.Helper()
		var v guard.Verdict
		if err := custom.DecodeResult(enc, texts, &v); err != nil {
			t.Fatalf("DecodeResult(%q): %v", enc, err)
		}
		var got []string
		for _, m := range v.Masks {
			got = append(got, string(rune('0'+m.Index))+"="+string(m.Data))
		}
		if v.Action != action || v.Rule != rule || v.Message != msg || strings.Join(got, "|") != strings.Join(masks, "|") {
			t.Fatalf("DecodeResult(%q) = %d %q %q %q; want %d %q %q %q", enc, v.Action, v.Rule, v.Message, got, action, rule, msg, masks)
		}
	}
	bad := func(enc string, want error, detail string) {
		t.Helper()
		var v guard.Verdict
		err := custom.DecodeResult(enc, texts, &v)
		if err == nil || !errors.Is(err, want) || !strings.Contains(err.Error(), detail) {
			t.Fatalf("DecodeResult(%q) = %v; want %v with %q", enc, err, want, detail)
		}
		if v.Action != guard.Allow || len(v.Masks) != 0 || len(v.Buf) != 0 {
			t.Fatalf("DecodeResult(%q) left a verdict behind: %+v", enc, v)
		}
	}
	ok("A", guard.Allow, "", "")
	ok("B\n", guard.Block, custom.DefaultRule, "")
	ok("Bpii.email\nno e-mail\naddresses", guard.Block, "pii.email", "no e-mail\naddresses")
	ok("R0,1:x2,2:yz", guard.Rewrite, custom.DefaultRule, "", "0=x", "2=yz")
	ok("R1,3:b😀", guard.Allow, "", "") // unchanged text: no mask
	ok("R1,3:😀z", guard.Rewrite, custom.DefaultRule, "", "1=😀z")
	ok("R0,0:", guard.Rewrite, custom.DefaultRule, "", "0=")
	ok("R", guard.Allow, "", "")

	bad("", custom.ErrResult, "malformed")
	bad("Ax", custom.ErrResult, "malformed")
	bad("Bno newline", custom.ErrResult, "malformed")
	bad("Bbad rule\nx", custom.ErrResult, "malformed")
	bad("B"+strings.Repeat("r", 65)+"\nx", custom.ErrResult, "malformed")
	bad("B\n"+strings.Repeat("x", 3073), custom.ErrResult, "malformed")
	bad("R0,1:x0,1:y", custom.ErrResult, "malformed")          // index twice
	bad("R1,1:x0,1:y", custom.ErrResult, "malformed")          // out of order
	bad("R3,1:x", custom.ErrResult, "malformed")               // index out of range
	bad("R0,5:xy", custom.ErrResult, "malformed")              // shorter than its length
	bad("R1,1:😀", custom.ErrResult, "malformed")               // length ends inside a pair
	bad("R0,1:x2", custom.ErrResult, "malformed")              // truncated entry
	bad("R0,1x", custom.ErrResult, "malformed")                // no ':'
	bad("R9999999999,1:x", custom.ErrResult, "malformed")      // too many digits
	bad("R0,1:\xff", custom.ErrResult, "malformed")            // invalid UTF-8
	bad("R0,1:x1,1:y2,1:\xffz", custom.ErrResult, "malformed") // bad after good: nothing kept
	bad("ETypeError@3:9", custom.ErrThrew, "TypeError at script:3:9")
	bad("Ethrow", custom.ErrThrew, "a non-Error value")
	bad("ESecretClass", custom.ErrResult, "malformed")
	bad("EError@3:x", custom.ErrResult, "malformed")
	bad("M", custom.ErrMemory, "max_memory_bytes")
	bad("Mx", custom.ErrResult, "malformed")
	bad("S2", custom.ErrResult, `"allow", "block" or "replace"`)
	bad("S0", custom.ErrResult, "malformed")
	bad("S9", custom.ErrResult, "malformed")
	bad("Z", custom.ErrResult, "malformed")
}
