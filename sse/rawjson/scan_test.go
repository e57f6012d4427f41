package rawjson_test

import (
	"errors"
	"strings"
	"testing"

	"gw/sse/rawjson"
)

func TestKindOf(t *testing.T) {
	f := func(raw string, want rawjson.Kind) {
		t.Helper()
		if got := rawjson.KindOf([]byte(raw)); got != want {
			t.Fatalf("KindOf(%q) = %s; want %s", raw, got, want)
		}
	}
	f(`"x"`, rawjson.String)
	f(`-1`, rawjson.Number)
	f(`0`, rawjson.Number)
	f(`9e9`, rawjson.Number)
	f(`{}`, rawjson.Object)
	f(`[]`, rawjson.Array)
	f(`true`, rawjson.True)
	f(`false`, rawjson.False)
	f(`null`, rawjson.Null)
	f(``, rawjson.Invalid)
	f(` 1`, rawjson.Invalid)
	f(`+1`, rawjson.Invalid)
	if s := rawjson.Kind(200).String(); s != "invalid" {
		t.Fatalf("Kind(200).String() = %q", s)
	}
	if s := rawjson.Array.String(); s != "array" {
		t.Fatalf("Array.String() = %q", s)
	}
}

func TestGet(t *testing.T) {
	f := func(data, key, want string, wantKind rawjson.Kind) {
		t.Helper()
		val, kind, ok := rawjson.Get([]byte(data), key)
		if !ok {
			t.Fatalf("Get(%q, %q): not found; want %q", data, key, want)
		}
		if string(val) != want || kind != wantKind {
			t.Fatalf("Get(%q, %q) = %q, %s; want %q, %s", data, key, val, kind, want, wantKind)
		}
		if cap(val) != len(val) {
			t.Fatalf("Get(%q, %q): cap %d != len %d", data, key, cap(val), len(val))
		}
	}
	f(`{"model":"gpt-4o"}`, "model", `"gpt-4o"`, rawjson.String)
	f(`{"a":1,"model":"m","b":2}`, "model", `"m"`, rawjson.String)
	f(` { "stream" : true , "x":null } `, "stream", `true`, rawjson.True)
	f("{\n\t\"x\":\r\n false\n}\n", "x", `false`, rawjson.False)
	f(`{"x":null}`, "x", `null`, rawjson.Null)
	f(`{"n":-12.5e+3}`, "n", `-12.5e+3`, rawjson.Number)
	f(`{"n":0}`, "n", `0`, rawjson.Number)
	f(`{"n":1E-7,"m":2}`, "n", `1E-7`, rawjson.Number)
	// Nested values are skipped, including brackets and quotes inside strings.
	f(`{"messages":[{"role":"user","content":"a } ] { [ \" \\"}],"model":"m"}`, "model", `"m"`, rawjson.String)
	f(`{"o":{"model":"inner"},"model":"outer"}`, "model", `"outer"`, rawjson.String)
	f(`{"o":{"a":[1,[2,[3,{"b":{}}]]]}}`, "o", `{"a":[1,[2,[3,{"b":{}}]]]}`, rawjson.Object)
	f(`{"a":[],"b":{}}`, "a", `[]`, rawjson.Array)
	f(`{"a":[],"b":{}}`, "b", `{}`, rawjson.Object)
	f(`{"s":"\\"}`, "s", `"\\"`, rawjson.String)
	f(`{"s":"\\\"","t":1}`, "t", `1`, rawjson.Number)
	f(`{"s":"é ✓ 😀"}`, "s", `"é ✓ 😀"`, rawjson.String)
	// Keys are compared unescaped.
	f(`{"mod\u0065l":"m"}`, "model", `"m"`, rawjson.String)
	f(`{"\u006d\u006F\u0064\u0065\u006c":"m"}`, "model", `"m"`, rawjson.String)
	f(`{"a\/b":1}`, "a/b", `1`, rawjson.Number)
	f(`{"a\"b":1}`, `a"b`, `1`, rawjson.Number)
	f(`{"a\\b":1}`, `a\b`, `1`, rawjson.Number)
	f(`{"\n":1}`, "\n", `1`, rawjson.Number)
	f(`{"ключ":1}`, "ключ", `1`, rawjson.Number)
	f(`{"\u043a\u043b\u044e\u0447":1}`, "ключ", `1`, rawjson.Number)
	f(`{"\ud83d\ude00":1}`, "😀", `1`, rawjson.Number)
	f(`{"":1}`, "", `1`, rawjson.Number)
	// Duplicate keys: the last occurrence wins, whatever its spelling.
	f(`{"model":"a","model":"b"}`, "model", `"b"`, rawjson.String)
	f(`{"model":"a","x":1,"mod\u0065l":"b"}`, "model", `"b"`, rawjson.String)
	f(`{"model":"a","mode":"b"}`, "model", `"a"`, rawjson.String)
	// Names match without case, as encoding/json fills a struct field
	// (Unicode simple folding: ſ is s, the Kelvin sign k).
	f(`{"Model":"a"}`, "model", `"a"`, rawjson.String)
	f(`{"model":"a","MODEL":"b"}`, "model", `"b"`, rawjson.String)
	f(`{"\u004dodel":"a"}`, "model", `"a"`, rawjson.String)
	f(`{"ſtream":true}`, "stream", `true`, rawjson.True)
	f(`{"\u017ftream":true}`, "stream", `true`, rawjson.True)
	f(`{"max_toKens":1}`, "max_tokens", `1`, rawjson.Number)
	f(`{"generationconfig":1}`, "generationConfig", `1`, rawjson.Number)
	f(`{"КЛЮЧ":1}`, "ключ", `1`, rawjson.Number)
}

func TestGetMissing(t *testing.T) {
	f := func(data, key string) {
		t.Helper()
		val, kind, ok := rawjson.Get([]byte(data), key)
		if ok || val != nil || kind != rawjson.Invalid {
			t.Fatalf("Get(%q, %q) = %q, %s, %v; want nil, invalid, false", data, key, val, kind, ok)
		}
	}
	f(`{}`, "model")
	f(` { } `, "model")
	f(`{"models":1}`, "model")
	f(`{"mode":1}`, "model")
	f(`{"Model_":1}`, "model")
	f(`{"modél":1}`, "model")
	f(`{"o":{"model":1}}`, "model")
	f(`{"a":"model"}`, "model")
	f(`{"mod\u0065":1}`, "model")
	// Not objects.
	f(`[{"model":1}]`, "model")
	f(`"model"`, "model")
	f(`null`, "model")
	f(``, "model")
	f(`   `, "model")
	// Malformed top level, even after the key.
	f(`{"model":1`, "model")
	f(`{"model":1,}`, "model")
	f(`{"model":1 "x":2}`, "model")
	f(`{"model":1}x`, "model")
	f(`{"model":1}{}`, "model")
	f(`{"model" 1}`, "model")
	f(`{model:1}`, "model")
	f(`{"model":01}`, "model")
	f(`{"model":tru}`, "model")
	f(`{"model":truex}`, "model")
	f(`{"model":"x}`, "model")
	f(`{"model":[1,2}`, "model")
	f(`{"model":}`, "model")
	f(`{,"model":1}`, "model")
	f(`{"model":1,,"x":2}`, "model")
	f(`{"mod\u00":1}`, "model")
	f("\ufeff{\"model\":1}", "model")
}

func TestGetPath(t *testing.T) {
	data := []byte(`{"stream":true,"stream_options":{"include_usage":true,"x":{"y":[1]}},"n":1}`)
	f := func(want string, ok bool, keys ...string) {
		t.Helper()
		val, kind, gotOK := rawjson.GetPath(data, keys...)
		if gotOK != ok || string(val) != want {
			t.Fatalf("GetPath(%q) = %q, %v; want %q, %v", keys, val, gotOK, want, ok)
		}
		if ok && kind != rawjson.KindOf(val) {
			t.Fatalf("GetPath(%q): kind %s; want %s", keys, kind, rawjson.KindOf(val))
		}
	}
	f(`true`, true, "stream_options", "include_usage")
	f(`[1]`, true, "stream_options", "x", "y")
	f(`{"y":[1]}`, true, "stream_options", "x")
	f(``, false, "stream_options", "missing")
	f(``, false, "stream", "include_usage")
	f(``, false, "n", "x")
	f(``, false, "missing", "x")
	f(string(data), true)

	val, kind, ok := rawjson.GetPath([]byte("  [1]\n"))
	if !ok || string(val) != "[1]" || kind != rawjson.Array {
		t.Fatalf("GetPath(array) = %q, %s, %v", val, kind, ok)
	}
	if _, _, ok := rawjson.GetPath([]byte(" [1] x")); ok {
		t.Fatalf("GetPath(trailing garbage): ok")
	}
}

func TestScanTop(t *testing.T) {
	keys := []string{"model", "stream", "stream_options", "messages", "absent", "ключ"}
	vals := make([][]byte, len(keys))
	data := []byte(`{"messages":[{"role":"user","content":"hi"}],"model":"a","stream":true,` +
		`"stream_options":{"include_usage":true},"mod\u0065l":"b","\u043a\u043b\u044e\u0447":7}`)
	if err := rawjson.ScanTop(data, keys, vals); err != nil {
		t.Fatalf("ScanTop: %s", err)
	}
	want := []string{`"b"`, `true`, `{"include_usage":true}`, `[{"role":"user","content":"hi"}]`, ``, `7`}
	for i := range keys {
		if string(vals[i]) != want[i] {
			t.Fatalf("ScanTop %q = %q; want %q", keys[i], vals[i], want[i])
		}
	}
	if vals[4] != nil {
		t.Fatalf("ScanTop absent = %q; want nil", vals[4])
	}

	// A malformed body clears everything.
	err := rawjson.ScanTop([]byte(`{"model":"a",}`), keys, vals)
	if !errors.Is(err, rawjson.ErrSyntax) {
		t.Fatalf("ScanTop(trailing comma) err = %v; want ErrSyntax", err)
	}
	for i, v := range vals {
		if v != nil {
			t.Fatalf("ScanTop error: vals[%d] = %q; want nil", i, v)
		}
	}
	if err := rawjson.ScanTop([]byte(`[]`), keys, vals); !errors.Is(err, rawjson.ErrNotObject) {
		t.Fatalf("ScanTop([]) err = %v; want ErrNotObject", err)
	}

	// More than 64 keys use the slow path past the 64th.
	many := make([]string, 70)
	for i := range many {
		many[i] = "k" + strings.Repeat("x", i)
	}
	manyVals := make([][]byte, len(many))
	if err := rawjson.ScanTop([]byte(`{"k`+strings.Repeat("x", 69)+`":1}`), many, manyVals); err != nil {
		t.Fatalf("ScanTop(many): %s", err)
	}
	if string(manyVals[69]) != "1" {
		t.Fatalf("ScanTop(many)[69] = %q; want 1", manyVals[69])
	}

	defer func() {
		if recover() == nil {
			t.Fatalf("ScanTop with short vals did not panic")
		}
	}()
	_ = rawjson.ScanTop(data, keys, vals[:1])
}

func TestForEachKey(t *testing.T) {
	f := func(data, want string) {
		t.Helper()
		var b strings.Builder
		err := rawjson.ForEachKey([]byte(data), func(key, val []byte, kind rawjson.Kind) bool {
			b.WriteString(string(key) + "=" + string(val) + ":" + kind.String() + ";")
			return true
		})
		if err != nil {
			t.Fatalf("ForEachKey(%q): %s", data, err)
		}
		if b.String() != want {
			t.Fatalf("ForEachKey(%q) = %s; want %s", data, b.String(), want)
		}
	}
	f(`{}`, ``)
	f(" {\n} ", ``)
	f(`{"a":1}`, `"a"=1:number;`)
	f(`{ "a" : [1, {"b":2}] , "a":"x\"y", "c\u0064":{}}`,
		`"a"=[1, {"b":2}]:array;"a"="x\"y":string;"c\u0064"={}:object;`)
	f(`{"t":true,"f":false,"n":null}`, `"t"=true:true;"f"=false:false;"n"=null:null;`)

	// Early stop does not look at the rest.
	n := 0
	err := rawjson.ForEachKey([]byte(`{"a":1,"b":2,garbage`), func(key, val []byte, kind rawjson.Kind) bool {
		n++
		return !rawjson.StringEquals(key, "b")
	})
	if err != nil || n != 2 {
		t.Fatalf("ForEachKey early stop: n=%d err=%v; want 2, nil", n, err)
	}
}

func TestForEachElem(t *testing.T) {
	f := func(data, want string) {
		t.Helper()
		var b strings.Builder
		next := 0
		err := rawjson.ForEachElem([]byte(data), func(i int, val []byte, kind rawjson.Kind) bool {
			if i != next {
				t.Fatalf("ForEachElem(%q): index %d; want %d", data, i, next)
			}
			next++
			b.WriteString(string(val) + ":" + kind.String() + ";")
			return true
		})
		if err != nil {
			t.Fatalf("ForEachElem(%q): %s", data, err)
		}
		if b.String() != want {
			t.Fatalf("ForEachElem(%q) = %s; want %s", data, b.String(), want)
		}
	}
	f(`[]`, ``)
	f(" [ \n ] ", ``)
	f(`[1]`, `1:number;`)
	f(`[ "a" , {"b":[1,2]},[[[]]], -0.5e1 ,true,false,null ]`,
		`"a":string;{"b":[1,2]}:object;[[[]]]:array;-0.5e1:number;true:true;false:false;null:null;`)
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	f(`[`+deep+`]`, deep+`:array;`)

	// messages roles, the gateway's use.
	msgs := []byte(`[{"role":"system","content":"s"},{"content":"u","role":"user"},{"role":"assistant"}]`)
	var roles []string
	err := rawjson.ForEachElem(msgs, func(i int, val []byte, kind rawjson.Kind) bool {
		role, _, _ := rawjson.Get(val, "role")
		roles = append(roles, string(role))
		return true
	})
	if err != nil || strings.Join(roles, ",") != `"system","user","assistant"` {
		t.Fatalf("roles = %q, %v", roles, err)
	}

	n := 0
	err = rawjson.ForEachElem([]byte(`[1,2,3 garbage`), func(i int, val []byte, kind rawjson.Kind) bool {
		n++
		return i < 1
	})
	if err != nil || n != 2 {
		t.Fatalf("ForEachElem early stop: n=%d err=%v; want 2, nil", n, err)
	}
}

func TestForEachMalformed(t *testing.T) {
	noop := func(key, val []byte, kind rawjson.Kind) bool { return true }
	obj := func(data string, want error) {
		t.Helper()
		if err := rawjson.ForEachKey([]byte(data), noop); !errors.Is(err, want) {
			t.Fatalf("ForEachKey(%q) err = %v; want %v", data, err, want)
		}
	}
	obj(``, rawjson.ErrUnexpectedEnd)
	obj(` `, rawjson.ErrUnexpectedEnd)
	obj(`[]`, rawjson.ErrNotObject)
	obj(`"{}"`, rawjson.ErrNotObject)
	obj(`{`, rawjson.ErrUnexpectedEnd)
	obj(`{"a"`, rawjson.ErrUnexpectedEnd)
	obj(`{"a":`, rawjson.ErrUnexpectedEnd)
	obj(`{"a":1`, rawjson.ErrUnexpectedEnd)
	obj(`{"a":1,`, rawjson.ErrUnexpectedEnd)
	obj(`{"a":"x`, rawjson.ErrUnexpectedEnd)
	obj(`{"a":"x\"}`, rawjson.ErrUnexpectedEnd)
	obj(`{"a":{"b":1}`, rawjson.ErrUnexpectedEnd)
	obj(`{"a":[[1]`, rawjson.ErrUnexpectedEnd)
	obj(`{"a":tr`, rawjson.ErrUnexpectedEnd)
	obj(`{"a":-`, rawjson.ErrUnexpectedEnd)
	obj(`{"a":1.`, rawjson.ErrUnexpectedEnd)
	obj(`{"a":1e+`, rawjson.ErrUnexpectedEnd)
	obj(`{"a`, rawjson.ErrUnexpectedEnd)
	obj(`{"a":1,}`, rawjson.ErrSyntax)
	obj(`{,}`, rawjson.ErrSyntax)
	obj(`{"a":1 "b":2}`, rawjson.ErrSyntax)
	obj(`{"a" 1}`, rawjson.ErrSyntax)
	obj(`{"a"::1}`, rawjson.ErrSyntax)
	obj(`{a:1}`, rawjson.ErrSyntax)
	obj(`{'a':1}`, rawjson.ErrSyntax)
	obj(`{1:1}`, rawjson.ErrSyntax)
	obj(`{"a":trux}`, rawjson.ErrSyntax)
	obj(`{"a":nul}`, rawjson.ErrSyntax)
	obj(`{"a":+1}`, rawjson.ErrSyntax)
	obj(`{"a":.5}`, rawjson.ErrSyntax)
	obj(`{"a":01}`, rawjson.ErrSyntax)
	obj(`{"a":1.e5}`, rawjson.ErrSyntax)
	obj(`{"a":1e}`, rawjson.ErrSyntax)
	obj(`{"a":--1}`, rawjson.ErrSyntax)
	obj(`{"a":NaN}`, rawjson.ErrSyntax)
	obj(`{"a":}`, rawjson.ErrSyntax)
	obj(`{"a":1}}`, rawjson.ErrSyntax)
	obj(`{"a":1} x`, rawjson.ErrSyntax)
	obj(`{"a":1}]`, rawjson.ErrSyntax)

	noopElem := func(i int, val []byte, kind rawjson.Kind) bool { return true }
	arr := func(data string, want error) {
		t.Helper()
		if err := rawjson.ForEachElem([]byte(data), noopElem); !errors.Is(err, want) {
			t.Fatalf("ForEachElem(%q) err = %v; want %v", data, err, want)
		}
	}
	arr(``, rawjson.ErrUnexpectedEnd)
	arr(`{}`, rawjson.ErrNotArray)
	arr(`[`, rawjson.ErrUnexpectedEnd)
	arr(`[1`, rawjson.ErrUnexpectedEnd)
	arr(`[1,`, rawjson.ErrUnexpectedEnd)
	arr(`["a`, rawjson.ErrUnexpectedEnd)
	arr(`[[1]`, rawjson.ErrUnexpectedEnd)
	arr(`[1,]`, rawjson.ErrSyntax)
	arr(`[,1]`, rawjson.ErrSyntax)
	arr(`[1 2]`, rawjson.ErrSyntax)
	arr(`[1:2]`, rawjson.ErrSyntax)
	arr(`[1]]`, rawjson.ErrSyntax)
	arr(`[1] 2`, rawjson.ErrSyntax)
	arr(`[x]`, rawjson.ErrSyntax)
}

// TestNoPanic feeds every prefix and single-byte corruption of a realistic
// body to every reader and editor; none may panic or read out of bounds.
func TestNoPanic(t *testing.T) {
	body := []byte(chatRequest)
	corrupt := []byte(`"\{}[],:01-+.eEtfnu` + "\x00\xff ")
	check := func(data []byte) {
		rawjson.Valid(data)
		rawjson.Get(data, "model")
		rawjson.GetPath(data, "stream_options", "include_usage")
		_ = rawjson.ForEachKey(data, func(key, val []byte, kind rawjson.Kind) bool {
			_ = rawjson.ForEachElem(val, func(int, []byte, rawjson.Kind) bool { return true })
			_, _ = rawjson.AppendUnquote(nil, key)
			return true
		})
		_, _ = rawjson.Set(nil, data, "model", []byte(`"x"`))
		_, _ = rawjson.Delete(nil, data, "messages")
		_, _ = rawjson.Rename(nil, data, "max_tokens", "max_completion_tokens")
		_, _ = rawjson.AppendUnquote(nil, data)
		rawjson.StringEquals(data, "model")
		rawjson.ParseFloat(data)
		rawjson.ParseInt(data)
	}
	for i := range body {
		check(body[:i])
	}
	buf := make([]byte, len(body))
	for i := 0; i < len(body); i += 3 {
		for _, c := range corrupt {
			copy(buf, body)
			buf[i] = c
			check(buf)
		}
	}
}
