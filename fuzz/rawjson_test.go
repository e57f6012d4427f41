package fuzz

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"gw/sse/rawjson"
)

// Seeds: real request bodies and stream chunks, plus the corners of the
// grammar (escapes, surrogates, duplicates, deep nesting, broken input).
var rawjsonSeeds = []string{
	`{"model":"gpt-4o-2024-08-06","messages":[{"role":"system","content":"You are helpful."},` +
		`{"role":"user","content":"Hi \"there\"\nZoë \u2014 😀"}],"stream":true,` +
		`"stream_options":{"include_usage":true},"temperature":0.2,"max_tokens":1024}`,
	`{"id":"chatcmpl-A1b2C3","object":"chat.completion.chunk","created":1723456789,"model":"gpt-4o",` +
		`"system_fingerprint":"fp_x","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`,
	`{"id":"chatcmpl-A1b2C3","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":9,` +
		`"completion_tokens":12,"total_tokens":21}}`,
	`{"model":"claude-3-5-sonnet-20241022","max_tokens":1024,"system":[{"type":"text","text":"Be brief."}],` +
		`"messages":[{"role":"user","content":[{"type":"text","text":"Hello"}]}],"stream":true}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`,
	`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],` +
		`"model":"claude-3-5-sonnet-20241022","usage":{"input_tokens":25,"output_tokens":1}}}`,
	`{"tool_calls":[{"function":{"arguments":"{\"city\":\"Paris\",\"unit\":\"c\"}"}}]}`,
	"{\n  \"model\" : \"x\",\n  \"mod\\u0065l\" : \"y\"\n}\n",
	`{"model":"a","model":"b","usage":null,"usage":{}}`,
	`{"\ud83d\ude00":"\ud800","\u006d":"\udc00\ud800","a\/b":"\\\"\b\f\n\r\t"}`,
	`{"n":[-0,1e10,-2.5E-3,0.000001,123456789012345678901234567890]}`,
	`{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
	`{}`, ` { } `, `[]`, `"x"`, `null`, `1`, ``,
	`{"a":1,}`, `{"a" 1}`, `{"a":01}`, `{"a":"\x"}`, `{"a":[1}`, `{"a":1}x`, "{\"a\":\"\xff\"}", `{"a":"`,
}

func rawjsonAddSeeds(f *testing.F, add func(seed []byte, i int)) {
	for i, s := range rawjsonSeeds {
		add([]byte(s), i)
	}
}

// rawjsonDecode decodes an object into raw members, last duplicate winning.
func rawjsonDecode(t *testing.T, data []byte) map[string]string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("encoding/json cannot decode %q: %s", data, err)
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

// rawjsonIsObject reports whether data is a valid JSON object.
func rawjsonIsObject(data []byte) bool {
	return rawjson.Valid(data) && rawjson.KindOf(bytes.TrimLeft(data, " \t\r\n")) == rawjson.Object
}

// rawjsonReadAll runs every reader over data; they must not panic.
func rawjsonReadAll(data []byte, key string) {
	rawjson.Get(data, key)
	rawjson.GetPath(data, key, key)
	vals := make([][]byte, 2)
	_ = rawjson.ScanTop(data, []string{key, "model"}, vals)
	_ = rawjson.ForEachKey(data, func(k, v []byte, kind rawjson.Kind) bool {
		_ = rawjson.ForEachElem(v, func(int, []byte, rawjson.Kind) bool { return true })
		rawjson.StringEquals(k, key)
		rawjson.ParseFloat(v)
		rawjson.ParseInt(v)
		return true
	})
	_ = rawjson.ForEachElem(data, func(int, []byte, rawjson.Kind) bool { return true })
}

// FuzzRawJSONValid checks Valid against encoding/json.Valid (plus the UTF-8
// rule) and, on valid objects, every reader against encoding/json.
func FuzzRawJSONValid(f *testing.F) {
	rawjsonAddSeeds(f, func(seed []byte, _ int) { f.Add(seed) })
	f.Fuzz(func(t *testing.T, data []byte) {
		want := json.Valid(data) && utf8.Valid(data)
		if got := rawjson.Valid(data); got != want {
			t.Fatalf("Valid(%q) = %v; want %v", data, got, want)
		}
		rawjsonReadAll(data, "model")
		if !want || !rawjsonIsObject(data) {
			return
		}
		ref := rawjsonDecode(t, data)
		last := map[string]string{}
		err := rawjson.ForEachKey(data, func(k, v []byte, kind rawjson.Kind) bool {
			key, err := rawjson.AppendUnquote(nil, k)
			if err != nil {
				t.Fatalf("AppendUnquote(%q) of a valid key: %s", k, err)
			}
			if kind != rawjson.KindOf(v) {
				t.Fatalf("ForEachKey kind %s for %q", kind, v)
			}
			last[string(key)] = string(v)
			return true
		})
		if err != nil {
			t.Fatalf("ForEachKey(%q): %s", data, err)
		}
		if !maps.Equal(last, ref) {
			t.Fatalf("ForEachKey(%q) = %v; encoding/json %v", data, last, ref)
		}
		// Get matches names as encoding/json fills a struct field: without
		// case, the last of them winning.
		for k := range ref {
			want := ""
			_ = rawjson.ForEachKey(data, func(key, v []byte, _ rawjson.Kind) bool {
				if name, _ := rawjson.AppendUnquote(nil, key); strings.EqualFold(string(name), k) {
					want = string(v)
				}
				return true
			})
			got, _, ok := rawjson.Get(data, k)
			if !ok || string(got) != want {
				t.Fatalf("Get(%q, %q) = %q, %v; want %q", data, k, got, ok, want)
			}
		}
	})
}

// FuzzRawJSONSet checks that Set on a valid object yields a valid object in
// which Get returns the new value and every other member is unchanged, and
// that no input makes it panic.
func FuzzRawJSONSet(f *testing.F) {
	rawjsonAddSeeds(f, func(seed []byte, i int) {
		f.Add(seed, "model", []byte(`"gpt-4o-mini"`))
		f.Add(seed, []string{"usage", "", "mod\u0065l", `q"`, "😀"}[i%5], []byte(`{"a":[1,2]}`))
	})
	f.Fuzz(func(t *testing.T, data []byte, key string, val []byte) {
		if !rawjson.Valid(val) {
			val = rawjson.AppendQuoteBytes(nil, val)
		}
		val = bytes.Trim(val, " \t\r\n") // Get returns values without whitespace
		dst := []byte("keep")
		out, err := rawjson.Set(dst, data, key, val)
		if err != nil {
			if string(out) != "keep" {
				t.Fatalf("Set(%q) error %v but dst changed: %q", data, err, out)
			}
		} else if !bytes.HasPrefix(out, dst) {
			t.Fatalf("Set(%q) lost the dst prefix: %q", data, out)
		}
		if !rawjsonIsObject(data) {
			return
		}
		if err != nil {
			t.Fatalf("Set(%q, %q, %q): %s", data, key, val, err)
		}
		out = out[len("keep"):]
		if !rawjson.Valid(out) {
			t.Fatalf("Set(%q, %q, %q) = %q: not valid", data, key, val, out)
		}
		if !utf8.ValidString(key) {
			return // AppendQuote rewrote the key as U+FFFD
		}
		got, _, ok := rawjson.Get(out, key)
		if !ok || string(got) != string(val) {
			t.Fatalf("Set(%q, %q, %q) = %q: Get = %q, %v", data, key, val, out, got, ok)
		}
		want := rawjsonDecode(t, data)
		want[key] = string(val)
		if gotMap := rawjsonDecode(t, out); !maps.Equal(gotMap, want) {
			t.Fatalf("Set(%q, %q, %q) = %q: decodes to %v; want %v", data, key, val, out, gotMap, want)
		}
	})
}

// FuzzRawJSONEdit checks Delete, Rename and SetIfAbsent against the same
// edit made on the encoding/json decoding.
func FuzzRawJSONEdit(f *testing.F) {
	rawjsonAddSeeds(f, func(seed []byte, i int) {
		f.Add(seed, "usage", "model", uint8(i))
		f.Add(seed, "max_tokens", "max_completion_tokens", uint8(i+1))
	})
	f.Fuzz(func(t *testing.T, data []byte, key, to string, op uint8) {
		var out []byte
		var err error
		switch op % 3 {
		case 0:
			out, err = rawjson.Delete(nil, data, key)
		case 1:
			out, err = rawjson.Rename(nil, data, key, to)
		default:
			out, err = rawjson.SetIfAbsent(nil, data, key, []byte(`{"include_usage":true}`))
		}
		if !rawjsonIsObject(data) {
			return
		}
		if err != nil {
			t.Fatalf("edit %d (%q, %q, %q): %s", op%3, data, key, to, err)
		}
		if !rawjson.Valid(out) {
			t.Fatalf("edit %d (%q, %q, %q) = %q: not valid", op%3, data, key, to, out)
		}
		if !utf8.ValidString(key) || !utf8.ValidString(to) {
			return
		}
		want := rawjsonDecode(t, data)
		_, has := want[key]
		switch op % 3 {
		case 0:
			delete(want, key)
		case 1:
			if has {
				v := want[key]
				delete(want, key)
				want[to] = v
			}
		default:
			if has && string(out) != string(data) {
				t.Fatalf("SetIfAbsent(%q, %q) changed a present key: %q", data, key, out)
			}
			if !has {
				want[key] = `{"include_usage":true}`
			}
		}
		if !has && op%3 != 2 && string(out) != string(data) {
			t.Fatalf("edit %d (%q, %q, %q) of an absent key changed the document: %q", op%3, data, key, to, out)
		}
		if got := rawjsonDecode(t, out); !maps.Equal(got, want) {
			t.Fatalf("edit %d (%q, %q, %q) = %q: decodes to %v; want %v", op%3, data, key, to, out, got, want)
		}
	})
}

// FuzzRawJSONUnquote checks AppendUnquote and StringEquals against
// encoding/json on string literals, and AppendQuote round trips.
func FuzzRawJSONUnquote(f *testing.F) {
	for _, s := range []string{
		`""`, `"gpt-4o"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u20AC\ud83d\ude00"`, `"\ud800"`, `"\udc00\ud800x"`,
		`"\ud800\u0041"`, "\"\xff\xc3(\"", `"é ✓ 😀"`, `"\x"`, `"\u12"`, "\"\n\"", `"abc`, `"a"b"`, `"\"`,
	} {
		f.Add([]byte(s))
	}
	rawjsonAddSeeds(f, func(seed []byte, _ int) {
		_ = rawjson.ForEachKey(seed, func(k, v []byte, kind rawjson.Kind) bool {
			f.Add(k)
			if kind == rawjson.String {
				f.Add(v)
			}
			return true
		})
	})
	f.Fuzz(func(t *testing.T, quoted []byte) {
		got, err := rawjson.AppendUnquote([]byte("pre"), quoted)
		literal := len(quoted) >= 2 && quoted[0] == '"' && quoted[len(quoted)-1] == '"'
		var want string
		jerr := json.Unmarshal(quoted, &want)
		if literal {
			// encoding/json is the reference for exactly one literal.
			if (err == nil) != (jerr == nil) {
				t.Fatalf("AppendUnquote(%q) err = %v; encoding/json err = %v", quoted, err, jerr)
			}
		} else if err == nil {
			t.Fatalf("AppendUnquote(%q) accepted a non-literal", quoted)
		}
		if err != nil {
			if string(got) != "pre" {
				t.Fatalf("AppendUnquote(%q) error but dst changed: %q", quoted, got)
			}
			if rawjson.StringEquals(quoted, want) || rawjson.StringEquals(quoted, "") {
				t.Fatalf("StringEquals(%q) true for an invalid literal", quoted)
			}
			return
		}
		s := string(got[3:])
		if s != want {
			t.Fatalf("AppendUnquote(%q) = %q; encoding/json %q", quoted, s, want)
		}
		if !rawjson.StringEquals(quoted, s) {
			t.Fatalf("StringEquals(%q, %q) = false", quoted, s)
		}
		if rawjson.StringEquals(quoted, s+"x") || (len(s) > 0 && rawjson.StringEquals(quoted, s[:len(s)-1])) {
			t.Fatalf("StringEquals(%q) matches a different string", quoted)
		}
		// AppendQuote round trip: the output is valid and decodes back.
		q := rawjson.AppendQuote(nil, s)
		if !rawjson.Valid(q) {
			t.Fatalf("AppendQuote(%q) = %q: not valid", s, q)
		}
		back, err := rawjson.AppendUnquote(nil, q)
		if err != nil || string(back) != s {
			t.Fatalf("AppendUnquote(AppendQuote(%q)) = %q, %v", s, back, err)
		}
		// Quoting arbitrary bytes agrees with encoding/json's decoding.
		q = rawjson.AppendQuoteBytes(nil, quoted)
		var ref string
		refQ, _ := json.Marshal(string(quoted))
		if err := json.Unmarshal(refQ, &ref); err != nil {
			t.Fatal(err)
		}
		if back, err := rawjson.AppendUnquote(nil, q); err != nil || string(back) != ref {
			t.Fatalf("AppendQuoteBytes(%q) = %q decodes to %q, %v; want %q", quoted, q, back, err, ref)
		}
	})
}

// rawjsonCursorTrace walks the value at c with rawjson.Cursor (containers
// descended to depth 16, deeper ones read whole) and writes what it saw; a
// string's escape flag must match a backslash in its spelling, a key's a
// backslash, a non-ASCII byte or an upper-case letter (decoded and folded to
// compare).
func rawjsonCursorTrace(t *testing.T, c *rawjson.Cursor, out []byte, depth int) []byte {
	k := c.Kind()
	if (k == rawjson.Object || k == rawjson.Array) && depth < 16 {
		c.Begin()
		out = append(out, '<')
		for c.More() {
			if k == rawjson.Object {
				key, esc := c.Key()
				if key != nil && esc != (bytes.IndexByte(key, '\\') >= 0 || !isASCII(key) || bytes.ContainsFunc(key, unicode.IsUpper)) {
					t.Fatalf("key %q: esc %v", key, esc)
				}
				out = append(append(out, key...), '=')
			}
			out = append(rawjsonCursorTrace(t, c, out, depth+1), ';')
		}
		return append(out, '>')
	}
	v, kind, esc := c.Value()
	if kind == rawjson.String && esc != (bytes.IndexByte(v, '\\') >= 0) {
		t.Fatalf("value %q: esc %v", v, esc)
	}
	return append(append(out, v...), '/', byte('0'+kind))
}

// rawjsonForEachTrace is rawjsonCursorTrace with ForEachKey/ForEachElem.
func rawjsonForEachTrace(v []byte, k rawjson.Kind, out []byte, depth int) []byte {
	if (k == rawjson.Object || k == rawjson.Array) && depth < 16 {
		out = append(out, '<')
		if k == rawjson.Object {
			_ = rawjson.ForEachKey(v, func(key, val []byte, vk rawjson.Kind) bool {
				out = append(append(out, key...), '=')
				out = append(rawjsonForEachTrace(val, vk, out, depth+1), ';')
				return true
			})
		} else {
			_ = rawjson.ForEachElem(v, func(_ int, val []byte, vk rawjson.Kind) bool {
				out = append(rawjsonForEachTrace(val, vk, out, depth+1), ';')
				return true
			})
		}
		return append(out, '>')
	}
	return append(append(out, v...), '/', byte('0'+k))
}

// FuzzRawJSONCursor: the one-pass Cursor never panics, and on valid JSON it sees
// exactly the keys, elements and values ForEachKey/ForEachElem see, and
// finds the document well-formed. A strict cursor's walk ends without error
// exactly when Valid accepts the document, and sees the same.
func FuzzRawJSONCursor(f *testing.F) {
	rawjsonAddSeeds(f, func(seed []byte, _ int) { f.Add(seed) })
	f.Fuzz(func(t *testing.T, data []byte) {
		var c rawjson.Cursor
		c.Reset(data)
		got := rawjsonCursorTrace(t, &c, nil, 0)
		end := c.End()
		c.ResetStrict(data)
		strict := rawjsonCursorTrace(t, &c, nil, 0)
		strictEnd := c.End()
		if valid := rawjson.Valid(data); (strictEnd == nil) != valid {
			t.Fatalf("%q: strict End %v, Valid %v", data, strictEnd, valid)
		}
		if !rawjson.Valid(data) {
			return
		}
		if end != nil {
			t.Fatalf("valid %q: End: %v", data, end)
		}
		if !bytes.Equal(strict, got) {
			t.Fatalf("%q:\n strict  %q\n lenient %q", data, strict, got)
		}
		v, k, ok := rawjson.GetPath(data)
		if !ok {
			t.Fatalf("valid %q: GetPath failed", data)
		}
		if want := rawjsonForEachTrace(v, k, nil, 0); !bytes.Equal(got, want) {
			t.Fatalf("%q:\n cursor  %q\n foreach %q", data, got, want)
		}
	})
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// FuzzRawJSONFoldNames: ValidNames refuses exactly the valid documents in
// which one object holds two names equal without case (Unicode folding,
// strings.EqualFold) but spelled differently once decoded, naming the
// first such member as a token walk of encoding/json finds it; Get agrees
// with encoding/json filling a struct.
func FuzzRawJSONFoldNames(f *testing.F) {
	rawjsonAddSeeds(f, func(seed []byte, _ int) { f.Add(seed) })
	for _, s := range []string{
		`{"model":"a","Model":"b"}`, `{"a":{"b":[{"content":"x","Content":"y"}]}}`, `{"stream":1,"\u017ftream":2}`,
		`{"max_to\u212aens":1,"max_tokens":2}`, `{"model":"a","mod\u0065l":"b"}`, `[{"X":1},{"x":2,"y":{"Y":3,"y":4}}]`,
		`{"a1":1,"a2":1,"a3":1,"a4":1,"a5":1,"a6":1,"a7":1,"a8":1,"a9":1,"B":{"b":1},"A3":2,"a1":3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		valid, folded := rawjson.ValidNames(data)
		if valid != rawjson.Valid(data) {
			t.Fatalf("ValidNames(%q) valid %v; Valid says otherwise", data, valid)
		}
		if !valid {
			if folded != nil {
				t.Fatalf("ValidNames(%q) named %q in an invalid document", data, folded)
			}
			return
		}
		want := refFoldConflicts(t, data)
		if (len(want) > 0) != (folded != nil) {
			t.Fatalf("ValidNames(%q) = %q; reference found %v", data, folded, want)
		}
		if folded != nil {
			got, err := rawjson.AppendUnquote(nil, folded)
			if err != nil || !want[string(got)] {
				t.Fatalf("ValidNames(%q) named %q; reference %v", data, folded, want)
			}
		}
		// FoldConflict, the walk of the whole document: the first object
		// to end that holds one.
		if got := rawjson.FoldConflict(data); (got != nil) != (folded != nil) {
			t.Fatalf("FoldConflict(%q) = %q; ValidNames %q", data, got, folded)
		}
		if rawjson.KindOf(bytes.TrimLeft(data, " \t\r\n")) != rawjson.Object {
			return
		}
		var s struct {
			Model  json.RawMessage `json:"model"`
			Stream json.RawMessage `json:"stream"`
			Key    json.RawMessage `json:"ключ"`
		}
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatalf("encoding/json: %s", err)
		}
		for i, k := range []string{"model", "stream", "ключ"} {
			w := [...]json.RawMessage{s.Model, s.Stream, s.Key}[i]
			if got, _, _ := rawjson.Get(data, k); string(got) != string(w) {
				t.Fatalf("Get(%q, %q) = %q; encoding/json into a struct: %q", data, k, got, w)
			}
		}
	})
}

// refFoldConflicts walks data's tokens with encoding/json and returns, for
// every object holding two names equal under folding but not in text, the
// later name of each such pair.
func refFoldConflicts(t *testing.T, data []byte) map[string]bool {
	out := map[string]bool{}
	d := json.NewDecoder(bytes.NewReader(data))
	type level struct {
		obj   bool
		names []string
		key   bool // the next string token of an object is a name
	}
	var stack []*level
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("encoding/json tokens of a valid document %q: %s", data, err)
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if top != nil && top.obj {
					top.key = true
				}
				stack = append(stack, &level{obj: v == '{', key: v == '{'})
				continue
			}
			stack = stack[:len(stack)-1]
			if !top.obj {
				continue
			}
			for j := 1; j < len(top.names); j++ {
				for i := 0; i < j; i++ {
					if top.names[i] != top.names[j] && strings.EqualFold(top.names[i], top.names[j]) {
						out[top.names[j]] = true
					}
				}
			}
			if len(stack) > 0 && stack[len(stack)-1].obj {
				stack[len(stack)-1].key = true
			}
		case string:
			if top != nil && top.obj && top.key {
				top.names = append(top.names, v)
				top.key = false
				continue
			}
			if top != nil && top.obj {
				top.key = true
			}
		default:
			if top != nil && top.obj {
				top.key = true
			}
		}
	}
}

// FuzzRawJSONNameIs: NameIs, which compares a name spelled in as many
// bytes as the wanted one letter by letter and decodes only longer
// spellings, agrees with decoding the name and comparing under folding
// (strings.EqualFold, as encoding/json matches a field).
func FuzzRawJSONNameIs(f *testing.F) {
	for _, s := range [][2]string{
		{`"model"`, "model"}, {`"Model"`, "model"}, {`"MODEL"`, "model"}, {`"mod\u0065l"`, "model"},
		{`"\u017ftream"`, "stream"}, {`"ſtream"`, "stream"}, {`"max_to\u212aens"`, "max_tokens"},
		{`"max_toKens"`, "max_tokens"}, {`"mode"`, "model"}, {`"model "`, "model"}, {`"mode\\"`, "model"},
		{`"m@del"`, "m`del"}, {`"ключ"`, "КЛЮЧ"}, {`""`, ""}, {`"a"`, "ab"},
	} {
		f.Add([]byte(s[0]), s[1])
	}
	f.Fuzz(func(t *testing.T, quoted []byte, name string) {
		if !utf8.ValidString(name) || rawjson.KindOf(quoted) != rawjson.String || !rawjson.Valid(quoted) ||
			quoted[len(quoted)-1] != '"' {
			return // a raw quoted name, as ForEachKey and Cursor.Key give it
		}
		var dec string
		if err := json.Unmarshal(quoted, &dec); err != nil {
			return
		}
		if !utf8.Valid(quoted) || strings.ContainsRune(dec, utf8.RuneError) {
			return // invalid UTF-8 and lone surrogates decode to U+FFFD
		}
		if got, want := rawjson.NameIs(quoted, name), strings.EqualFold(dec, name); got != want {
			t.Fatalf("NameIs(%s, %q) = %v; decoded %q, EqualFold says %v", quoted, name, got, dec, want)
		}
	})
}
