package rawjson_test

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"gw/sse/rawjson"
)

func TestAppendQuote(t *testing.T) {
	f := func(s, want string) {
		t.Helper()
		if got := rawjson.AppendQuote(nil, s); string(got) != want {
			t.Fatalf("AppendQuote(%q) = %s; want %s", s, got, want)
		}
		if got := rawjson.AppendQuoteBytes([]byte("x"), []byte(s)); string(got) != "x"+want {
			t.Fatalf("AppendQuoteBytes(%q) = %s; want x%s", s, got, want)
		}
	}
	f(``, `""`)
	f(`gpt-4o`, `"gpt-4o"`)
	f(`a"b\c/d`, `"a\"b\\c/d"`)
	f("\n\r\t\b\f", `"\n\r\t\b\f"`)
	f("\x00\x01\x1f\x7f", `"\u0000\u0001\u001f`+"\x7f"+`"`)
	f(`<a href="x">&amp;</a>`, `"<a href=\"x\">&amp;</a>"`)
	f("é ✓ 😀 \u2028\u2029", "\"é ✓ 😀 \u2028\u2029\"")
	f("long plain run of ascii text that spans several words\n", `"long plain run of ascii text that spans several words\n"`)
	// Invalid UTF-8: each bad byte becomes \ufffd, valid runes around it stay.
	f("a\xffb", `"a\ufffdb"`)
	f("\xc3", `"\ufffd"`)
	f("\xc3(", `"\ufffd("`)
	f("\xed\xa0\x80", `"\ufffd\ufffd\ufffd"`) // encoded surrogate
	f("\xf4\x90\x80\x80", `"\ufffd\ufffd\ufffd\ufffd"`)
	f("é\xe2\x82", `"é\ufffd\ufffd"`)
	f("\xe2\x82\xac\xe2\x82", `"€\ufffd\ufffd"`)
}

// TestAppendQuoteAgainstEncodingJSON checks that random byte strings quote to
// valid JSON that decodes as encoding/json decodes its own encoding.
func TestAppendQuoteAgainstEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab\"\\/\n\x00\x1f\x7f<>&é€😀\xff\xc3\xe2\x82\xed\xa0\x80\xf0\x9f")
	for range 20000 {
		b := make([]byte, r.IntN(24))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		q := rawjson.AppendQuoteBytes(nil, b)
		if !json.Valid(q) || !rawjson.Valid(q) {
			t.Fatalf("AppendQuoteBytes(%q) = %q: not valid JSON", b, q)
		}
		ref, _ := json.Marshal(string(b))
		var want, got string
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(q, &got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("AppendQuoteBytes(%q) = %q decodes to %q; want %q", b, q, got, want)
		}
	}
}

func TestAppendUnquote(t *testing.T) {
	f := func(quoted, want string) {
		t.Helper()
		got, err := rawjson.AppendUnquote([]byte("pre"), []byte(quoted))
		if err != nil {
			t.Fatalf("AppendUnquote(%q): %s", quoted, err)
		}
		if string(got) != "pre"+want {
			t.Fatalf("AppendUnquote(%q) = %q; want %q", quoted, got[3:], want)
		}
		var ref string
		if err := json.Unmarshal([]byte(quoted), &ref); err != nil || ref != want {
			t.Fatalf("encoding/json disagrees on %q: %q, %v", quoted, ref, err)
		}
		if !rawjson.StringEquals([]byte(quoted), want) {
			t.Fatalf("StringEquals(%q, %q) = false", quoted, want)
		}
	}
	f(`""`, ``)
	f(`"gpt-4o"`, `gpt-4o`)
	f(`"a\"b\\c\/d"`, `a"b\c/d`)
	f(`"\b\f\n\r\t"`, "\b\f\n\r\t")
	f(`"\u0041\u00e9\u20AC\uffff"`, "Aé€\uffff")
	f(`"\u0000"`, "\x00")
	f(`"\ud83d\ude00"`, "😀")
	f(`"x\uD83D\uDE00y"`, "x😀y")
	f(`"\udbff\udfff"`, "\U0010FFFF")
	// Lone and mismatched surrogates decode to U+FFFD, as in encoding/json.
	f(`"\ud800"`, "\uFFFD")
	f(`"\ud800x"`, "\uFFFDx")
	f(`"\udc00\ud800"`, "\uFFFD\uFFFD")
	f(`"\ud800\ud800\udc00"`, "\uFFFD\U00010000")
	f(`"\ud800\n"`, "\uFFFD\n")
	f(`"\ud800\u0041"`, "\uFFFDA")
	// Raw UTF-8 passes through; each invalid byte becomes U+FFFD.
	f(`"é ✓ 😀"`, "é ✓ 😀")
	f("\"a\xffb\"", "a\uFFFDb")
	f("\"\xe2\x82\"", "\uFFFD\uFFFD")
	f("\"\xed\xa0\x80\"", "\uFFFD\uFFFD\uFFFD")
	f("\"\x7f<>&\"", "\x7f<>&")
	f(`"`+strings.Repeat(`long \"text\" `, 10)+`"`, strings.Repeat(`long "text" `, 10))
}

func TestAppendUnquoteInvalid(t *testing.T) {
	f := func(quoted string) {
		t.Helper()
		got, err := rawjson.AppendUnquote([]byte("pre"), []byte(quoted))
		if !errors.Is(err, rawjson.ErrInvalidString) {
			t.Fatalf("AppendUnquote(%q) err = %v; want ErrInvalidString", quoted, err)
		}
		if string(got) != "pre" {
			t.Fatalf("AppendUnquote(%q) on error = %q; want dst unchanged", quoted, got)
		}
		// encoding/json also accepts surrounding whitespace; AppendUnquote
		// takes exactly one literal.
		var ref string
		if json.Unmarshal([]byte(quoted), &ref) == nil && strings.TrimSpace(quoted) == quoted {
			t.Fatalf("encoding/json accepts %q", quoted)
		}
		if rawjson.StringEquals([]byte(quoted), ref) {
			t.Fatalf("StringEquals(%q, %q) = true", quoted, ref)
		}
	}
	f(``)
	f(`"`)
	f(`abc`)
	f(`"abc`)
	f(`abc"`)
	f(` "abc"`)
	f(`"abc" `)
	f(`"a"b"`)
	f(`"a\"`)
	f(`"\"`)
	f(`"\x"`)
	f(`"\'"`)
	f(`"\u"`)
	f(`"\u12"`)
	f(`"\u12g4"`)
	f(`"\ud800\u12"`)
	f("\"\n\"")
	f("\"tab\there\"")
	f("\"\x00\"")
	f("\"\x1f\"")
}

func TestStringEquals(t *testing.T) {
	f := func(quoted, s string, want bool) {
		t.Helper()
		if got := rawjson.StringEquals([]byte(quoted), s); got != want {
			t.Fatalf("StringEquals(%q, %q) = %v; want %v", quoted, s, got, want)
		}
	}
	f(`"user"`, "user", true)
	f(`"user"`, "users", false)
	f(`"users"`, "user", false)
	f(`"user"`, "User", false)
	f(`""`, "", true)
	f(`""`, "a", false)
	f(`"\u0075ser"`, "user", true)
	f(`"us\u0065r"`, "user", true)
	f(`"use\u0072"`, "user", true)
	f(`"use\u0072"`, "use", false)
	f(`"use\u0072"`, "userx", false)
	f(`"\u0075ser"`, "xser", false)
	f(`"a\nb"`, "a\nb", true)
	f(`"a\nb"`, `a\nb`, false)
	f(`"ключ"`, "ключ", true)
	f(`"ключ"`, "ключи", false)
	f(`"\u043a\u043b\u044e\u0447"`, "ключ", true)
	f(`"\ud83d\ude00!"`, "😀!", true)
	f(`"\ud83d\ude00!"`, "😀?", false)
	f("\"\xff\"", "\uFFFD", true)
	f("\"\xff\"", "\xff", false)
	f(`"\ud800"`, "\uFFFD", true)
	f(`"abc`, "abc", false)
	f(`"\q"`, `\q`, false)
	f(`user`, "user", false)
	f(`"a"`+"", "a", true)
}
