package rawjson_test

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"unicode/utf8"

	"gw/sse/rawjson"
)

// docGen builds random valid JSON documents with random whitespace, escaped
// spellings, duplicate keys, unicode and deep nesting.
type docGen struct{ r *rand.Rand }

// genKeys is small on purpose so that duplicates are frequent.
var genKeys = []string{"model", "mode", "models", "stream", "usage", "a", "", "ключ", "😀", `q"k`, `b\s`, "c\nl", "/"}

var genStrings = []string{"", "gpt-4o", "hello world", `say "hi"`, `C:\path`, "line\nbreak\ttab", "é ✓ 😀", "\x00\x1f", "</script>&", "\u2028", "{[,:]}"}

var genNumbers = []string{"0", "-0", "7", "-1", "3.25", "1e10", "-2.5E-3", "1E+2", "123456789012345678901234567890", "0.000001"}

func (g *docGen) ws(b []byte) []byte {
	if g.r.IntN(3) != 0 {
		return b
	}
	for range 1 + g.r.IntN(3) {
		b = append(b, " \t\n\r"[g.r.IntN(4)])
	}
	return b
}

// str appends s quoted, escaping randomly chosen runes that need no escape.
func (g *docGen) str(b []byte, s string) []byte {
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r < 0x20 || g.r.IntN(6) == 0:
			if r >= 0x10000 {
				r -= 0x10000
				b = appendU4(b, 0xD800+r>>10)
				b = appendU4(b, 0xDC00+r&0x3FF)
			} else {
				b = appendU4(b, r)
			}
		case r == '/' && g.r.IntN(2) == 0:
			b = append(b, '\\', '/')
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}

func appendU4(b []byte, r rune) []byte {
	const hex = "0123456789abcdefABCDEF"
	b = append(b, '\\', 'u')
	for shift := 12; shift >= 0; shift -= 4 {
		b = append(b, hex[(r>>shift)&0xF])
	}
	return b
}

func (g *docGen) value(b []byte, depth int) []byte {
	n := 8
	if depth <= 0 {
		n = 5
	}
	switch g.r.IntN(n) {
	case 0:
		return g.str(b, genStrings[g.r.IntN(len(genStrings))])
	case 1:
		return append(b, genNumbers[g.r.IntN(len(genNumbers))]...)
	case 2:
		return append(b, "true"...)
	case 3:
		return append(b, "false"...)
	case 4:
		return append(b, "null"...)
	case 5, 6:
		return g.object(b, depth-1)
	default:
		b = append(b, '[')
		b = g.ws(b)
		for i := range g.r.IntN(4) {
			if i > 0 {
				b = g.ws(b)
				b = append(b, ',')
				b = g.ws(b)
			}
			b = g.value(b, depth-1)
		}
		b = g.ws(b)
		return append(b, ']')
	}
}

func (g *docGen) object(b []byte, depth int) []byte {
	b = append(b, '{')
	b = g.ws(b)
	for i := range g.r.IntN(6) {
		if i > 0 {
			b = g.ws(b)
			b = append(b, ',')
			b = g.ws(b)
		}
		b = g.str(b, genKeys[g.r.IntN(len(genKeys))])
		b = g.ws(b)
		b = append(b, ':')
		b = g.ws(b)
		b = g.value(b, depth)
	}
	b = g.ws(b)
	return append(b, '}')
}

func (g *docGen) doc() []byte {
	b := g.ws(nil)
	b = g.object(b, 3)
	return g.ws(b)
}

// pair is one member with its key decoded.
type pair struct{ key, val string }

func members(t *testing.T, data []byte) []pair {
	t.Helper()
	var ps []pair
	err := rawjson.ForEachKey(data, func(key, val []byte, kind rawjson.Kind) bool {
		k, err := rawjson.AppendUnquote(nil, key)
		if err != nil {
			t.Fatalf("AppendUnquote(%s): %s", key, err)
		}
		if kind != rawjson.KindOf(val) {
			t.Fatalf("kind %s for %s", kind, val)
		}
		ps = append(ps, pair{string(k), string(val)})
		return true
	})
	if err != nil {
		t.Fatalf("ForEachKey(%s): %s", data, err)
	}
	return ps
}

func decodeRaw(t *testing.T, data []byte) map[string]string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("encoding/json cannot decode %s: %s", data, err)
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

func TestCrossCheckEncodingJSON(t *testing.T) {
	g := &docGen{rand.New(rand.NewPCG(42, 7))}
	for range 5000 {
		doc := g.doc()
		if !json.Valid(doc) {
			t.Fatalf("generator produced invalid JSON: %s", doc)
		}
		if !rawjson.Valid(doc) {
			t.Fatalf("Valid(%s) = false", doc)
		}
		ref := decodeRaw(t, doc)
		ps := members(t, doc)

		// Readers agree with encoding/json (last duplicate wins).
		vals := make([][]byte, len(genKeys))
		if err := rawjson.ScanTop(doc, genKeys, vals); err != nil {
			t.Fatalf("ScanTop(%s): %s", doc, err)
		}
		for i, k := range genKeys {
			val, kind, ok := rawjson.Get(doc, k)
			want, has := ref[k]
			if ok != has || string(val) != want {
				t.Fatalf("Get(%s, %q) = %s, %v; encoding/json has %s, %v", doc, k, val, ok, want, has)
			}
			if ok && kind != rawjson.KindOf(val) {
				t.Fatalf("Get(%s, %q) kind %s", doc, k, kind)
			}
			if string(vals[i]) != want || (vals[i] == nil) == has {
				t.Fatalf("ScanTop(%s)[%q] = %s; want %s", doc, k, vals[i], want)
			}
		}
		last := map[string]string{}
		for _, p := range ps {
			last[p.key] = p.val
		}
		if !maps.Equal(last, ref) {
			t.Fatalf("ForEachKey(%s) = %v; encoding/json %v", doc, last, ref)
		}
		for k, v := range ref {
			// Nested objects and arrays agree too.
			if rawjson.KindOf([]byte(v)) == rawjson.Object {
				sub := decodeRaw(t, []byte(v))
				for sk, sv := range sub {
					got, _, ok := rawjson.GetPath(doc, k, sk)
					if !ok || string(got) != sv {
						t.Fatalf("GetPath(%s, %q, %q) = %s, %v; want %s", doc, k, sk, got, ok, sv)
					}
				}
			}
			if rawjson.KindOf([]byte(v)) == rawjson.Array {
				var elems []json.RawMessage
				if err := json.Unmarshal([]byte(v), &elems); err != nil {
					t.Fatal(err)
				}
				n := 0
				err := rawjson.ForEachElem([]byte(v), func(i int, val []byte, kind rawjson.Kind) bool {
					if i >= len(elems) || string(val) != string(elems[i]) {
						t.Fatalf("ForEachElem(%s)[%d] = %s", v, i, val)
					}
					n++
					return true
				})
				if err != nil || n != len(elems) {
					t.Fatalf("ForEachElem(%s) = %d elems, %v; want %d", v, n, err, len(elems))
				}
			}
		}

		key := genKeys[g.r.IntN(len(genKeys))]
		val := g.value(nil, 2)
		_, has := ref[key]

		// Set: every occurrence replaced in place, or appended.
		out, err := rawjson.Set(nil, doc, key, val)
		checkEdited(t, "Set", doc, out, err)
		want := maps.Clone(ref)
		want[key] = string(val)
		if got := decodeRaw(t, out); !maps.Equal(got, want) {
			t.Fatalf("Set(%s, %q, %s) = %s", doc, key, val, out)
		}
		wantPs := slices.Clone(ps)
		for i := range wantPs {
			if wantPs[i].key == key {
				wantPs[i].val = string(val)
			}
		}
		if !has {
			wantPs = append(wantPs, pair{key, string(val)})
		}
		if got := members(t, out); !slices.Equal(got, wantPs) {
			t.Fatalf("Set(%s, %q, %s) = %s: members %q; want %q", doc, key, val, out, got, wantPs)
		}

		// SetIfAbsent: exact copy when present.
		out, err = rawjson.SetIfAbsent(nil, doc, key, val)
		checkEdited(t, "SetIfAbsent", doc, out, err)
		if has && string(out) != string(doc) {
			t.Fatalf("SetIfAbsent(%s, %q) changed a present key: %s", doc, key, out)
		}
		if !has {
			if got := decodeRaw(t, out); !maps.Equal(got, want) {
				t.Fatalf("SetIfAbsent(%s, %q, %s) = %s", doc, key, val, out)
			}
		}

		// Delete: every occurrence gone, the rest in order.
		out, err = rawjson.Delete(nil, doc, key)
		checkEdited(t, "Delete", doc, out, err)
		wantPs = slices.DeleteFunc(slices.Clone(ps), func(p pair) bool { return p.key == key })
		if got := members(t, out); !slices.Equal(got, wantPs) {
			t.Fatalf("Delete(%s, %q) = %s: members %q; want %q", doc, key, out, got, wantPs)
		}
		if !has && string(out) != string(doc) {
			t.Fatalf("Delete(%s, %q) of an absent key changed the document: %s", doc, key, out)
		}

		// Rename: from's value wins over an existing to.
		to := genKeys[g.r.IntN(len(genKeys))]
		out, err = rawjson.Rename(nil, doc, key, to)
		checkEdited(t, "Rename", doc, out, err)
		want = maps.Clone(ref)
		wantPs = slices.Clone(ps)
		if has && key != to {
			want[to] = want[key]
			delete(want, key)
			wantPs = slices.DeleteFunc(wantPs, func(p pair) bool { return p.key == to })
			for i := range wantPs {
				if wantPs[i].key == key {
					wantPs[i].key = to
				}
			}
		}
		if got := decodeRaw(t, out); !maps.Equal(got, want) {
			t.Fatalf("Rename(%s, %q, %q) = %s", doc, key, to, out)
		}
		if got := members(t, out); !slices.Equal(got, wantPs) {
			t.Fatalf("Rename(%s, %q, %q) = %s: members %q; want %q", doc, key, to, out, got, wantPs)
		}
		if !has && string(out) != string(doc) {
			t.Fatalf("Rename(%s, %q, %q) of an absent key changed the document: %s", doc, key, to, out)
		}
	}
}

func checkEdited(t *testing.T, name string, doc, out []byte, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s(%s): %s", name, doc, err)
	}
	if !rawjson.Valid(out) || !json.Valid(out) {
		t.Fatalf("%s(%s) = %s: not valid JSON", name, doc, out)
	}
}

// TestCrossCheckValid compares Valid with encoding/json on random documents
// and random corruptions of them.
func TestCrossCheckValid(t *testing.T) {
	g := &docGen{rand.New(rand.NewPCG(9, 9))}
	alphabet := []byte("\"\\{}[],:0-+.eEtfnu \n\x01\xff\xc3")
	for range 20000 {
		doc := g.value(nil, 4)
		switch g.r.IntN(4) {
		case 0:
			doc[g.r.IntN(len(doc))] = alphabet[g.r.IntN(len(alphabet))]
		case 1:
			doc = doc[:g.r.IntN(len(doc))]
		case 2:
			i := g.r.IntN(len(doc) + 1)
			doc = slices.Insert(doc, i, alphabet[g.r.IntN(len(alphabet))])
		}
		want := json.Valid(doc) && utf8.Valid(doc)
		if got := rawjson.Valid(doc); got != want {
			t.Fatalf("Valid(%q) = %v; want %v", doc, got, want)
		}
		if want {
			if _, _, ok := rawjson.GetPath(doc); !ok {
				t.Fatalf("GetPath(%q) failed on a valid document", doc)
			}
		}
	}
}
