package rawjson_test

import (
	"bytes"
	"strings"
	"testing"

	"gw/sse/rawjson"
)

// cursorTrace walks the value at c with the Cursor and writes what it saw:
// containers descended (up to depth 8; deeper ones read whole), keys,
// scalar spans with their kind and escape flag.
func cursorTrace(t testing.TB, c *rawjson.Cursor, out []byte, depth int) []byte {
	k := c.Kind()
	if (k == rawjson.Object || k == rawjson.Array) && depth < 8 {
		c.Begin()
		out = append(out, '<')
		for c.More() {
			if k == rawjson.Object {
				key, esc := c.Key()
				if key != nil && esc != (bytes.IndexByte(key, '\\') >= 0) {
					t.Fatalf("key %s: esc %v", key, esc)
				}
				out = append(append(out, key...), '=')
			}
			out = append(cursorTrace(t, c, out, depth+1), ';')
		}
		return append(out, '>')
	}
	v, kind, esc := c.Value()
	if kind == rawjson.String && esc != (bytes.IndexByte(v, '\\') >= 0) {
		t.Fatalf("value %s: esc %v", v, esc)
	}
	return append(append(out, v...), '/', byte('0'+kind))
}

// refTrace is cursorTrace with ForEachKey and ForEachElem.
func refTrace(v []byte, k rawjson.Kind, out []byte, depth int) []byte {
	if (k == rawjson.Object || k == rawjson.Array) && depth < 8 {
		out = append(out, '<')
		if k == rawjson.Object {
			_ = rawjson.ForEachKey(v, func(key, val []byte, vk rawjson.Kind) bool {
				out = append(append(out, key...), '=')
				out = append(refTrace(val, vk, out, depth+1), ';')
				return true
			})
		} else {
			_ = rawjson.ForEachElem(v, func(_ int, val []byte, vk rawjson.Kind) bool {
				out = append(refTrace(val, vk, out, depth+1), ';')
				return true
			})
		}
		return append(out, '>')
	}
	return append(append(out, v...), '/', byte('0'+k))
}

func TestCursorAgreesWithForEach(t *testing.T) {
	for _, s := range []string{
		`{}`, ` [ ] `, `"x"`, `1`, `-2.5e3`, `true`, `null`,
		`{"a":1,"b":[true,false,null,"s\"q",{"c":{}}],"a":"dup"}`,
		"{\n \"mod\\u0065l\" : \"x\" ,\t\"m\":[ 1 , 2 ]\n}\n",
		`{"messages":[{"role":"user","content":"hi \n there"},{"role":"assistant","content":[{"type":"text","text":"t"}]}]}`,
		`[[[[[[[[[[[[1,[2]]]]]]]]]]]]]`,
		`{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":{"j":"deep"}}}}}}}}}}`,
	} {
		data := []byte(s)
		if !rawjson.Valid(data) {
			t.Fatalf("test input %q is not valid", s)
		}
		var c rawjson.Cursor
		c.Reset(data)
		got := cursorTrace(t, &c, nil, 0)
		if err := c.End(); err != nil {
			t.Errorf("%q: End: %v", s, err)
		}
		v, k, _ := rawjson.GetPath(data)
		if want := refTrace(v, k, nil, 0); !bytes.Equal(got, want) {
			t.Errorf("%q:\n cursor %s\n   want %s", s, got, want)
		}
	}
}

func TestCursorErrors(t *testing.T) {
	for _, s := range []string{
		``, ` `, `[`, `[1,]`, `[,1]`, `[1 2]`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{a:1}`,
		`{"a":1}x`, `{"a":"x`, `{"a`, `[tru]`, `[01]`, `{"a":[1}`, `[1,`, `{,}`,
	} {
		var c rawjson.Cursor
		c.Reset([]byte(s))
		cursorTrace(t, &c, nil, 0)
		if c.End() == nil {
			t.Errorf("%q: no error", s)
		}
	}
}

// A strict walk of the whole document ends without error exactly when
// Valid accepts it, and sees what the lenient walk sees.
func TestCursorStrict(t *testing.T) {
	for _, s := range []string{
		// valid
		`{}`, ` [ ] `, `"x"`, `1`, `-2.5e3`, `true`, `null`, `"\u00e9\n"`,
		`{"a":1,"b":[true,false,null,"s\"q",{"c":{}}],"a":"dup"}`,
		"{\n \"mod\\u0065l\" : \"x\" ,\t\"m\":[ 1 , 2 ]\n}\n",
		`[[[[[[[[[[[[1,[2]]]]]]]]]]]]]`, `{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":{"j":[{}]}}}}}}}}}}`,
		"[\"\xc3\xa9\"]",
		// invalid, each only at a level or in a value the walk reads strictly
		``, `[`, `[1,]`, `{"a":1,}`, `{"a":[1}`, `[1}`, `{"a":1]`, `[[[[[[[[[[{"a":[1}]]]]]]]]]]`,
		`{"a":"\x"}`, `["\ud8"]`, "[\"\xff\"]", "{\"\xff\":1}", "[\"a\tb\"]",
		`[01]`, `[1.]`, `[-]`, `[tru]`, `{"a":1}x`, `[[[[[[[[[[[{"a":"\q"}]]]]]]]]]]]`,
		`{"k":{"a":[1}}`, `{"k":["\u12"]}`,
	} {
		data := []byte(s)
		var c rawjson.Cursor
		c.ResetStrict(data)
		got := cursorTrace(t, &c, nil, 0)
		err := c.End()
		if valid := rawjson.Valid(data); (err == nil) != valid {
			t.Errorf("%q: strict End %v, Valid %v", s, err, valid)
			continue
		}
		if err != nil {
			continue
		}
		c.Reset(data)
		if want := cursorTrace(t, &c, nil, 0); !bytes.Equal(got, want) {
			t.Errorf("%q:\n strict  %s\n lenient %s", s, got, want)
		}
	}
	// Deeper than MaxDepth counting the walked levels: the walk descends
	// 8 levels, Value validates the rest.
	deep := strings.Repeat("[", rawjson.MaxDepth) + strings.Repeat("]", rawjson.MaxDepth)
	for _, d := range []string{deep, "[" + deep + "]"} {
		var c rawjson.Cursor
		c.ResetStrict([]byte(d))
		cursorTrace(t, &c, nil, 0)
		if err, valid := c.End(), rawjson.Valid([]byte(d)); (err == nil) != valid {
			t.Errorf("depth %d: strict End %v, Valid %v", len(d)/2, err, valid)
		}
	}
}

// In strict mode each member is read with Key before its value.
func TestCursorStrictMisuse(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		walk       func(c *rawjson.Cursor)
	}{
		{"value without key", `{"a":1}`, func(c *rawjson.Cursor) { c.Begin(); c.More(); c.Value() }},
		{"begin without key", `{"a":{}}`, func(c *rawjson.Cursor) { c.Begin(); c.More(); c.Begin() }},
		{"key in an array", `["a":1]`, func(c *rawjson.Cursor) { c.Begin(); c.More(); c.Key() }},
		{"more at top level", `{"a":1}`, func(c *rawjson.Cursor) { c.More() }},
	} {
		var c rawjson.Cursor
		c.ResetStrict([]byte(tc.data))
		tc.walk(&c)
		if c.Err() == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// A misused cursor (Key on an array element, Value past the end) records
// an error rather than panicking.
func TestCursorMisuse(t *testing.T) {
	var c rawjson.Cursor
	c.Reset([]byte(`[1]`))
	c.Begin()
	c.More()
	if k, _ := c.Key(); k != nil || c.Err() == nil {
		t.Errorf("Key on an element: %q, %v", k, c.Err())
	}
	c.Reset([]byte(`1`))
	c.Value()
	if v, k, _ := c.Value(); v != nil || k != rawjson.Invalid || c.End() == nil {
		t.Errorf("Value past the end: %q %v %v", v, k, c.End())
	}
	var z rawjson.Cursor
	if z.Begin() || z.More() || z.End() == nil {
		t.Error("zero cursor")
	}
}

func TestCursorAllocs(t *testing.T) {
	data := []byte(chatRequest)
	var c rawjson.Cursor
	if n := testing.AllocsPerRun(100, func() { walkRoles(&c, data) }); n != 0 {
		t.Errorf("%v allocs", n)
	}
}

// walkRoles counts the user messages of a chat request in one pass.
func walkRoles(c *rawjson.Cursor, data []byte) int {
	users := 0
	c.Reset(data)
	c.Begin()
	for c.More() {
		if key, _ := c.Key(); string(key) != `"messages"` || c.Kind() != rawjson.Array {
			c.Value()
			continue
		}
		c.Begin()
		for c.More() {
			if c.Kind() != rawjson.Object {
				c.Value()
				continue
			}
			c.Begin()
			for c.More() {
				key, _ := c.Key()
				v, _, _ := c.Value()
				if string(key) == `"role"` && string(v) == `"user"` {
					users++
				}
			}
		}
	}
	return users
}

// BenchmarkCursor: counting the user messages of a chat request in one
// pass with the Cursor, against ForEachElem + ForEachKey (which scan each
// message twice).
func BenchmarkCursor(b *testing.B) {
	for _, bc := range []struct {
		name string
		data []byte
	}{
		{"2KB", []byte(chatRequest)},
		{"64KB", bigRequest(64 << 10)},
	} {
		b.Run(bc.name+"/cursor", func(b *testing.B) {
			var c rawjson.Cursor
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.data)))
			for b.Loop() {
				if sinkInt = walkRoles(&c, bc.data); sinkInt == 0 {
					b.Fatal("no user message")
				}
			}
		})
		b.Run(bc.name+"/foreach", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.data)))
			for b.Loop() {
				msgs, _, _ := rawjson.Get(bc.data, "messages")
				users := 0
				_ = rawjson.ForEachElem(msgs, func(_ int, m []byte, _ rawjson.Kind) bool {
					_ = rawjson.ForEachKey(m, func(key, v []byte, _ rawjson.Kind) bool {
						if string(key) == `"role"` && string(v) == `"user"` {
							users++
						}
						return true
					})
					return true
				})
				if sinkInt = users; users == 0 {
					b.Fatal("no user message")
				}
			}
		})
	}
}

// TestCursorCloser: Closer reports the bracket that ended the container
// More left, matching or not.
func TestCursorCloser(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want byte
	}{{`{}`, '}'}, {`{]`, ']'}, {`[1]`, ']'}, {`[1}`, '}'}, {`{"a":[1]}`, '}'}} {
		var c rawjson.Cursor
		c.Reset([]byte(tc.in))
		if c.Closer() != 0 {
			t.Fatalf("%s: Closer before any container = %q", tc.in, c.Closer())
		}
		c.Begin()
		for c.More() {
			if c.Kind() == rawjson.String {
				c.Key()
			}
			c.Value()
		}
		if c.Closer() != tc.want {
			t.Errorf("%s: Closer = %q; want %q", tc.in, c.Closer(), tc.want)
		}
	}
}

// Testrawjson.CursorResumeMember: a cursor resumed at the Pos another cursor had
// at a member of an identical prefix reads the rest as that cursor does.
func TestCursorResumeMember(t *testing.T) {
	docs := []string{
		`{"id":"a","object":"x","choices":[1,2],"usage":{"n":1}}`,
		`{"id":"a","object":"x","choices":[3],"n":2}`,
		`{"id":"a","object":"x","choices":[3],}`,
		`{"id":"a","object":"x","choices" 3}`,
		`{"id":"a","object":"x",}`,
	}
	// Walk the first document to the choices key.
	var c rawjson.Cursor
	c.Reset([]byte(docs[0]))
	if !c.Begin() {
		t.Fatal("cannot begin")
	}
	at := -1
	for c.More() {
		pos := c.Pos()
		k, _ := c.Key()
		if string(k) == `"choices"` {
			at = pos
			break
		}
		c.Value()
	}
	if at != len(`{"id":"a","object":"x",`) {
		t.Fatalf("Pos at choices = %d", at)
	}
	for _, d := range docs {
		var full, resumed rawjson.Cursor
		full.Reset([]byte(d))
		full.Begin()
		var want, got []string
		for full.More() {
			k, _ := full.Key()
			v, _, _ := full.Value()
			want = append(want, string(k)+"="+string(v))
		}
		resumed.ResumeMember([]byte(d), at)
		for next := true; next || resumed.More(); next = false {
			k, _ := resumed.Key()
			v, _, _ := resumed.Value()
			got = append(got, string(k)+"="+string(v))
		}
		// The full walk also read id and object.
		if len(want) >= 2 {
			want = want[2:]
		}
		ok := full.End() == nil
		if ok != (resumed.End() == nil) || (ok && strings.Join(want, ",") != strings.Join(got, ",")) {
			t.Errorf("%s: resumed read %q (end %v), full %q (end %v)", d, got, resumed.End(), want, full.End())
		}
	}
	var z rawjson.Cursor
	z.ResumeMember([]byte(`{}`), 99) // out of range: clamped, no panic
	if z.More() || z.Err() == nil {
		t.Error("a cursor resumed past the end reads nothing and fails")
	}
}
