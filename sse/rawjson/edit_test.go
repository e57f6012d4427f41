package rawjson_test

import (
	"errors"
	"testing"

	"gw/sse/rawjson"
)

// checkEdit runs an editor twice, into nil and after a prefix, and checks the
// exact output bytes.
func checkEdit(t *testing.T, name, data, want string, fn func(dst, data []byte) ([]byte, error)) {
	t.Helper()
	got, err := fn(nil, []byte(data))
	if err != nil {
		t.Fatalf("%s(%q): %s", name, data, err)
	}
	if string(got) != want {
		t.Fatalf("%s(%q)\n got %s\nwant %s", name, data, got, want)
	}
	if !rawjson.Valid(got) {
		t.Fatalf("%s(%q) = %s: not valid", name, data, got)
	}
	got, err = fn([]byte("prefix"), []byte(data))
	if err != nil || string(got) != "prefix"+want {
		t.Fatalf("%s(%q) after a prefix = %q, %v", name, data, got, err)
	}
}

func TestSet(t *testing.T) {
	f := func(data, key, val, want string) {
		t.Helper()
		checkEdit(t, "Set", data, want, func(dst, data []byte) ([]byte, error) {
			return rawjson.Set(dst, data, key, []byte(val))
		})
	}
	// Replace in place, everything else byte for byte.
	f(`{"model":"a"}`, "model", `"b"`, `{"model":"b"}`)
	f(`{"x":1,"model":"a","y":[1,2]}`, "model", `"gpt"`, `{"x":1,"model":"gpt","y":[1,2]}`)
	f(" { \"x\" : 1 ,\n \"model\" :\t\"a\" , \"y\" : 2 } \n", "model", `{"k":[]}`,
		" { \"x\" : 1 ,\n \"model\" :\t{\"k\":[]} , \"y\" : 2 } \n")
	f(`{"model":{"deep":["a","b"]},"z":0}`, "model", `null`, `{"model":null,"z":0}`)
	f(`{"max_tokens":100000}`, "max_tokens", `4096`, `{"max_tokens":4096}`)
	// Every duplicate is rewritten, whatever its spelling; one in another
	// case takes the key's name: the upstream reads gw's value under it.
	f(`{"model":"a","x":1,"mod\u0065l":"b"}`, "model", `"c"`, `{"model":"c","x":1,"mod\u0065l":"c"}`)
	f(`{"Model":"a","x":1,"MODEL":"b"}`, "model", `"c"`, `{"model":"c","x":1,"model":"c"}`)
	f(`{"ſtream":true}`, "stream", `false`, `{"stream":false}`)
	f(`{"ſtream":true}`, "stream", `false`, `{"stream":false}`)
	// Absent: append after the last member.
	f(`{}`, "model", `"m"`, `{"model":"m"}`)
	f(`{ }`, "model", `"m"`, `{"model":"m" }`)
	f(`{"a":1}`, "model", `"m"`, `{"a":1,"model":"m"}`)
	f("{\n  \"a\": 1\n}\n", "model", `"m"`, "{\n  \"a\": 1,\"model\":\"m\"\n}\n")
	f(`{"o":{"model":"inner"}}`, "model", `"m"`, `{"o":{"model":"inner"},"model":"m"}`)
	// New keys are quoted.
	f(`{}`, `we"ird`, `1`, `{"we\"ird":1}`)
	f(`{}`, "ключ", `1`, `{"ключ":1}`)
	f(`{"\u043a\u043b\u044e\u0447":0}`, "ключ", `1`, `{"\u043a\u043b\u044e\u0447":1}`)
}

func TestSetString(t *testing.T) {
	f := func(data, key, s, want string) {
		t.Helper()
		checkEdit(t, "SetString", data, want, func(dst, data []byte) ([]byte, error) {
			return rawjson.SetString(dst, data, key, s)
		})
	}
	f(chatChunk, "model", "gpt-4o",
		`{"id":"chatcmpl-A1b2C3d4E5f6G7h8I9j0","object":"chat.completion.chunk","created":1723456789,`+
			`"model":"gpt-4o","system_fingerprint":"fp_x","choices":[{"index":0,"delta":{"content":"Hello"},`+
			`"logprobs":null,"finish_reason":null}]}`)
	f(`{"model":1}`, "model", `a"b`+"\n", `{"model":"a\"b\n"}`)
	f(`{"a":1}`, "model", "m", `{"a":1,"model":"m"}`)
	f(`{"model":"x","model":"y"}`, "model", "", `{"model":"","model":""}`)
}

func TestSetIfAbsent(t *testing.T) {
	f := func(data, key, val, want string) {
		t.Helper()
		checkEdit(t, "SetIfAbsent", data, want, func(dst, data []byte) ([]byte, error) {
			return rawjson.SetIfAbsent(dst, data, key, []byte(val))
		})
	}
	f(`{}`, "stream_options", `{"include_usage":true}`, `{"stream_options":{"include_usage":true}}`)
	f(`{"a":1}`, "n", `1`, `{"a":1,"n":1}`)
	f(`{"n":2}`, "n", `1`, `{"n":2}`)
	f(`{"n":null}`, "n", `1`, `{"n":null}`)
	f(` {"n" : 2 , "m":3} `, "n", `1`, ` {"n" : 2 , "m":3} `)
	f(`{"\u006e":2}`, "n", `1`, `{"\u006e":2}`)
}

func TestDelete(t *testing.T) {
	f := func(data, key, want string) {
		t.Helper()
		checkEdit(t, "Delete", data, want, func(dst, data []byte) ([]byte, error) {
			return rawjson.Delete(dst, data, key)
		})
	}
	f(`{}`, "usage", `{}`)
	f(`{"a":1}`, "usage", `{"a":1}`)
	f(`{"usage":{"total_tokens":3}}`, "usage", `{}`)
	f(`{ "usage" : 1 }`, "usage", `{ }`)
	f(`{"usage":1,"a":2}`, "usage", `{"a":2}`)
	f(`{"a":1,"usage":2}`, "usage", `{"a":1}`)
	f(`{"a":1,"usage":2,"b":3}`, "usage", `{"a":1,"b":3}`)
	f(`{"a":1, "usage":2, "b":3}`, "usage", `{"a":1, "b":3}`)
	f("{\n  \"usage\": 1,\n  \"b\": 2\n}", "usage", "{\n  \"b\": 2\n}")
	f("{\n  \"a\": 1,\n  \"usage\": 2\n}", "usage", "{\n  \"a\": 1\n}")
	f("{\n  \"a\": 1,\n  \"usage\": 2,\n  \"b\": 3\n}", "usage", "{\n  \"a\": 1,\n  \"b\": 3\n}")
	// Duplicates, adjacent or not, first or last.
	f(`{"usage":1,"usage":2}`, "usage", `{}`)
	f(`{"usage":1,"usage":2,"a":3}`, "usage", `{"a":3}`)
	f(`{"a":0,"usage":1,"b":2,"us\u0061ge":3}`, "usage", `{"a":0,"b":2}`)
	f(`{"usage":1,"a":2,"usage":3,"usage":4,"b":5,"usage":6}`, "usage", `{"a":2,"b":5}`)
	f(" {\n \"usage\":1,\n \"usage\":2,\n \"a\":3\n} ", "usage", " {\n \"a\":3\n} ")
	f(chatChunk, "choices",
		`{"id":"chatcmpl-A1b2C3d4E5f6G7h8I9j0","object":"chat.completion.chunk","created":1723456789,`+
			`"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_x"}`)
}

func TestRename(t *testing.T) {
	f := func(data, from, to, want string) {
		t.Helper()
		checkEdit(t, "Rename", data, want, func(dst, data []byte) ([]byte, error) {
			return rawjson.Rename(dst, data, from, to)
		})
	}
	const from, to = "max_tokens", "max_completion_tokens"
	f(`{}`, from, to, `{}`)
	f(`{"max_tokens":10}`, from, to, `{"max_completion_tokens":10}`)
	f(`{"a":1, "max_tokens" : 10 ,"b":2}`, from, to, `{"a":1, "max_completion_tokens" : 10 ,"b":2}`)
	// The renamed value wins over an existing target, wherever it is.
	f(`{"max_completion_tokens":5,"max_tokens":10}`, from, to, `{"max_completion_tokens":10}`)
	f(`{"max_tokens":10,"max_completion_tokens":5}`, from, to, `{"max_completion_tokens":10}`)
	f(`{"a":1,"max_completion_tokens":5,"b":2,"max_tokens":10}`, from, to, `{"a":1,"b":2,"max_completion_tokens":10}`)
	// Absent source: exact copy, target kept.
	f(`{"max_completion_tokens":5}`, from, to, `{"max_completion_tokens":5}`)
	f(`{"a":1,"max_completion_tokens":5}`, from, to, `{"a":1,"max_completion_tokens":5}`)
	// Escaped spellings match and duplicates all rename.
	f(`{"max_tok\u0065ns":10}`, from, to, `{"max_completion_tokens":10}`)
	f(`{"max_tokens":1,"max_tokens":2}`, from, to, `{"max_completion_tokens":1,"max_completion_tokens":2}`)
	f(`{"a":1}`, "a", "a", `{"a":1}`)
	f(`{"\u0061":1}`, "a", "a", `{"a":1}`)
	f(`{"a":1}`, "a", `q"`, `{"q\"":1}`)
}

func TestEditMalformed(t *testing.T) {
	editors := map[string]func(dst, data []byte) ([]byte, error){
		"Set": func(dst, data []byte) ([]byte, error) { return rawjson.Set(dst, data, "model", []byte(`1`)) },
		"SetString": func(dst, data []byte) ([]byte, error) {
			return rawjson.SetString(dst, data, "model", "x")
		},
		"SetIfAbsent": func(dst, data []byte) ([]byte, error) {
			return rawjson.SetIfAbsent(dst, data, "model", []byte(`1`))
		},
		"Delete": func(dst, data []byte) ([]byte, error) { return rawjson.Delete(dst, data, "model") },
		"Rename": func(dst, data []byte) ([]byte, error) { return rawjson.Rename(dst, data, "model", "m") },
	}
	f := func(data string, want error) {
		t.Helper()
		for name, fn := range editors {
			dst := []byte("keep")
			got, err := fn(dst, []byte(data))
			if !errors.Is(err, want) {
				t.Fatalf("%s(%q) err = %v; want %v", name, data, err, want)
			}
			if string(got) != "keep" {
				t.Fatalf("%s(%q) on error = %q; want dst unchanged", name, data, got)
			}
		}
	}
	f(``, rawjson.ErrUnexpectedEnd)
	f(`[]`, rawjson.ErrNotObject)
	f(`"x"`, rawjson.ErrNotObject)
	f(`{`, rawjson.ErrUnexpectedEnd)
	f(`{"model":1`, rawjson.ErrUnexpectedEnd)
	f(`{"model":"x`, rawjson.ErrUnexpectedEnd)
	f(`{"a":[1,{"b":2}]`, rawjson.ErrUnexpectedEnd)
	f(`{"model":1,}`, rawjson.ErrSyntax)
	f(`{"model":1}x`, rawjson.ErrSyntax)
	f(`{"model":1}{"model":2}`, rawjson.ErrSyntax)
	f(`{"model" 1}`, rawjson.ErrSyntax)
	f(`{"model":1 "a":2}`, rawjson.ErrSyntax)
	f(`{"model":nil}`, rawjson.ErrSyntax)
	f(`{"model":01}`, rawjson.ErrSyntax)

	if _, err := rawjson.Set(nil, []byte(`{}`), "a", nil); !errors.Is(err, rawjson.ErrEmptyValue) {
		t.Fatalf("Set(empty value) err = %v; want ErrEmptyValue", err)
	}
	if _, err := rawjson.SetIfAbsent(nil, []byte(`{}`), "a", []byte{}); !errors.Is(err, rawjson.ErrEmptyValue) {
		t.Fatalf("SetIfAbsent(empty value) err = %v; want ErrEmptyValue", err)
	}
}

// TestSetReusesDst checks the append contract: spare capacity is used, and
// the input is never written.
func TestSetReusesDst(t *testing.T) {
	data := []byte(chatChunk)
	orig := string(data)
	dst := make([]byte, 0, 1024)
	for range 3 {
		out, err := rawjson.SetString(dst[:0], data, "model", "gpt-4o")
		if err != nil {
			t.Fatal(err)
		}
		if &out[0] != &dst[:1][0] {
			t.Fatalf("SetString did not reuse dst")
		}
		if v, _, _ := rawjson.Get(out, "model"); string(v) != `"gpt-4o"` {
			t.Fatalf("model = %s", v)
		}
	}
	if string(data) != orig {
		t.Fatalf("input modified")
	}
}

// TestSetPeek: SetPeek writes what Set writes and reads what Get reads.
func TestSetPeek(t *testing.T) {
	tests := []struct {
		name, data, peek, wantOut, wantPeek string
		wantErr                             bool
	}{
		{"both present", `{"model":"a","usage":{"t":1}}`, "usage", `{"model":"x","usage":{"t":1}}`, `{"t":1}`, false},
		{"peek absent", `{"model":"a"}`, "usage", `{"model":"x"}`, ``, false},
		{"key absent", `{"usage":2}`, "usage", `{"usage":2,"model":"x"}`, `2`, false},
		{"last duplicate", `{"usage":1,"model":"a","usage":3}`, "usage", `{"usage":1,"model":"x","usage":3}`, `3`, false},
		{"escaped spelling", `{"us\u0061ge":5,"model":"a"}`, "usage", `{"us\u0061ge":5,"model":"x"}`, `5`, false},
		{"malformed", `{"model":"a",`, "usage", ``, ``, true},
	}
	for _, tt := range tests {
		out, peeked, err := rawjson.SetPeek(nil, []byte(tt.data), "model", []byte(`"x"`), tt.peek)
		if (err != nil) != tt.wantErr || string(out) != tt.wantOut || string(peeked) != tt.wantPeek {
			t.Errorf("%s: SetPeek = %q, %q, %v; want %q, %q", tt.name, out, peeked, err, tt.wantOut, tt.wantPeek)
		}
	}
}
