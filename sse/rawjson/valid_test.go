package rawjson_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"gw/sse/rawjson"
)

func TestValid(t *testing.T) {
	f := func(data string, want bool) {
		t.Helper()
		if got := rawjson.Valid([]byte(data)); got != want {
			t.Fatalf("Valid(%q) = %v; want %v", data, got, want)
		}
		if ref := json.Valid([]byte(data)) && utf8.ValidString(data); ref != want {
			t.Fatalf("encoding/json (plus UTF-8) says %v for %q", ref, data)
		}
	}
	// Scalars at the top level.
	f(`0`, true)
	f(`-0`, true)
	f(`-0.0e-0`, true)
	f(`1.5E+10`, true)
	f(`123456789012345678901234567890`, true)
	f(`"x"`, true)
	f(`true`, true)
	f(`false`, true)
	f(`null`, true)
	f(" \t\r\n1 \t\r\n", true)
	f(``, false)
	f(` `, false)
	f(`01`, false)
	f(`-`, false)
	f(`+1`, false)
	f(`.5`, false)
	f(`1.`, false)
	f(`1.e1`, false)
	f(`1e`, false)
	f(`1e+`, false)
	f(`0x10`, false)
	f(`Infinity`, false)
	f(`NaN`, false)
	f(`tru`, false)
	f(`True`, false)
	f(`nulll`, false)
	f(`1 2`, false)
	f("\v1", false)
	f("\f1", false)
	f("\u00a01", false)
	f("\ufeff1", false)
	// Strings.
	f(`""`, true)
	f(`"\"\\\/\b\f\n\r\t\u0000\uFFFF\ud800"`, true)
	f(`"é ✓ 😀 `+"\x7f"+`"`, true)
	f(`"`, false)
	f(`"abc`, false)
	f(`"\"`, false)
	f(`"\a"`, false)
	f(`"\u12"`, false)
	f(`"\u12x4"`, false)
	f(`'a'`, false)
	f("\"\x00\"", false)
	f("\"\t\"", false)
	f("\"\n\"", false)
	f("\"\x1f\"", false)
	// Invalid UTF-8 is rejected (encoding/json.Valid accepts it).
	f("\"\xff\"", false)
	f("\"\xc3\"", false)
	f("\"\xed\xa0\x80\"", false)
	f("\"\xc0\xaf\"", false)
	f("\"\xf4\x90\x80\x80\"", false)
	f("\"long enough to take the word path \xff\"", false)
	// Containers.
	f(`{}`, true)
	f(`[]`, true)
	f(` { } `, true)
	f(`[ ]`, true)
	f(`{"a":1}`, true)
	f(`{"a":[1,{"b":null}],"a":{"c":[]}}`, true)
	f(`[1,"2",[3],{"4":4},true,false,null]`, true)
	f(chatRequest, true)
	f(chatChunk, true)
	f(`{`, false)
	f(`}`, false)
	f(`[`, false)
	f(`]`, false)
	f(`{]`, false)
	f(`[}`, false)
	f(`[1}`, false)
	f(`{"a":1]`, false)
	f(`{"a":[1}}`, false)
	f(`{"a"}`, false)
	f(`{"a":}`, false)
	f(`{"a" 1}`, false)
	f(`{a:1}`, false)
	f(`{1:1}`, false)
	f(`{"a":1,}`, false)
	f(`{,"a":1}`, false)
	f(`{"a":1 "b":2}`, false)
	f(`[1,]`, false)
	f(`[,]`, false)
	f(`[1 2]`, false)
	f(`[1:2]`, false)
	f(`{"a":1}}`, false)
	f(`{}{}`, false)
	f(`[]x`, false)
	f(`{"a":1}/`, false)
	f(`{"a":1} /**/`, false)
}

func TestValidDepth(t *testing.T) {
	f := func(data string, want bool) {
		t.Helper()
		if got := rawjson.Valid([]byte(data)); got != want {
			t.Fatalf("Valid(depth %d) = %v; want %v", len(data)/2, got, want)
		}
		if ref := json.Valid([]byte(data)); ref != want {
			t.Fatalf("encoding/json says %v at depth %d", ref, len(data)/2)
		}
	}
	nest := func(open, close string, n int) string {
		return strings.Repeat(open, n) + strings.Repeat(close, n)
	}
	for _, n := range []int{1, 63, 64, 65, 128, 1000, rawjson.MaxDepth} {
		f(nest("[", "]", n), true)
	}
	f(nest("[", "]", rawjson.MaxDepth+1), false)
	f(nest(`{"a":`, "}", 64)[:64*5]+"1"+strings.Repeat("}", 64), true)
	f(strings.Repeat(`{"a":`, 65)+"1"+strings.Repeat("}", 65), true)
	f(strings.Repeat(`{"a":[`, 100)+"1"+strings.Repeat("]}", 100), true)
	f(strings.Repeat(`{"a":[`, 100)+"1"+strings.Repeat("}]", 100), false)
	f(strings.Repeat(`[`, 70)+strings.Repeat("]", 69)+"}", false)
	f(strings.Repeat(`[`, 70)+strings.Repeat("]", 69), false)
	// Past 64 levels the deep stack must still tell objects from arrays.
	f(strings.Repeat(`[`, 70)+`{"a":1,"b":[2]}`+strings.Repeat("]", 70), true)
	f(strings.Repeat(`[`, 70)+`{"a":1,"b":[2}}`+strings.Repeat("]", 70), false)
	f(strings.Repeat(`{"a":`, 200)+`[1,2]`+strings.Repeat("}", 200), true)
	f(strings.Repeat(`{"a":`, 200)+`[1,2]`+strings.Repeat("}", 199)+"]", false)
}

// TestValidCorrupted checks every single-byte corruption of realistic bodies
// against encoding/json.
func TestValidCorrupted(t *testing.T) {
	alphabet := []byte("\"\\{}[],:0123-+.eE tfnrlsu\t\n\x00\x1f\xff")
	for _, body := range []string{chatRequest, chatChunk, `{"a":[1,-2.5e3,"x\u00e9",{"b":null}],"c":true}`} {
		buf := []byte(body)
		for i := range buf {
			orig := buf[i]
			for _, c := range alphabet {
				buf[i] = c
				got := rawjson.Valid(buf)
				want := json.Valid(buf) && utf8.Valid(buf)
				if got != want {
					t.Fatalf("Valid(%q) = %v; want %v", buf, got, want)
				}
			}
			buf[i] = orig
			if got, want := rawjson.Valid(buf[:i]), json.Valid(buf[:i]); got != want {
				t.Fatalf("Valid(%q) = %v; want %v", buf[:i], got, want)
			}
		}
	}
}
