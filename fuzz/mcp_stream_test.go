package fuzz

import (
	"strconv"
	"testing"

	"gw/edge/mcp"
)

// FuzzMCPEventID: a Last-Event-ID parses only in the one spelling gw
// writes (canonical decimals around one '_'), and what parses formats back
// to the same bytes.
func FuzzMCPEventID(f *testing.F) {
	for _, s := range []string{"0_1", "12_345", "18446744073709551615_0", "18446744073709551616_1", "01_2", "1_", "_1", "1_2_3", "-1_2", "1_+2", "", " 1_2"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		stream, seq, ok := mcp.ParseEventID(b)
		if !ok {
			return
		}
		if got := mcp.FormatEventID(nil, stream, seq); string(got) != string(b) {
			t.Fatalf("ParseEventID(%q) = %d, %d; formats as %q", b, stream, seq, got)
		}
		if string(b) != strconv.FormatUint(stream, 10)+"_"+strconv.FormatUint(seq, 10) {
			t.Fatalf("%q parsed as %d_%d", b, stream, seq)
		}
	})
}
