package fuzz

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"gw/edge/gateway/vars"
	"gw/sse/rawjson"
)

// FuzzGatewayPostArgPath: over any path and any JSON body, the post_arg
// selector yields only valid JSON values, and exactly the values a
// reference walk over encoding/json's decoding selects, in order.
func FuzzGatewayPostArgPath(f *testing.F) {
	body := `{"model":{"version":"4o"},"messages":[{"role":"user","content":[{"type":"text"},{"type":"image_url"}]},{"role":"a","content":"s"}]}`
	for _, p := range []string{"model.version", "messages[*].content[*].type", "messages[1].role", "messages[0]", "a[0][*]", "x"} {
		f.Add(p, body)
	}
	f.Add("a[*][1]", `{"a":[[1,2],[3],{"b":1},[4,[5]]],"a":[[0,9]]}`)
	f.Fuzz(func(t *testing.T, path, doc string) {
		segs, err := vars.ParsePath(path)
		if err != nil {
			return
		}
		var got []any
		vars.WalkJSON([]byte(doc), segs, func(v []byte, k rawjson.Kind) bool {
			if !rawjson.Valid(v) {
				t.Fatalf("%q over %q: yielded invalid JSON %q", path, doc, v)
			}
			got = append(got, decode(t, v))
			return true
		})
		// rawjson, and so post_arg, takes a body whose strings are not
		// UTF-8 for invalid JSON (RFC 8259 8.1); encoding/json reads it,
		// replacing the bytes. Such a body yields nothing.
		if !json.Valid([]byte(doc)) || !utf8.ValidString(doc) {
			return
		}
		var want []any
		refWalk(decode(t, []byte(doc)), strings.Split(path, "."), &want)
		if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("%q over %q: got %v; want %v", path, doc, got, want)
		}
	})
}

func decode(t *testing.T, b []byte) any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("cannot decode %q: %v", b, err)
	}
	return v
}

// refWalk is the reference selector over a decoded document.
func refWalk(v any, parts []string, out *[]any) {
	if len(parts) == 0 {
		*out = append(*out, v)
		return
	}
	part := parts[0]
	key, rest, _ := strings.Cut(part, "[")
	if key != "" {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		if v, ok = m[key]; !ok {
			return
		}
	}
	if rest == "" {
		refWalk(v, parts[1:], out)
		return
	}
	idx, more, _ := strings.Cut(rest, "]")
	var next []string
	if more != "" {
		next = append([]string{more}, parts[1:]...)
	} else {
		next = parts[1:]
	}
	arr, ok := v.([]any)
	if !ok {
		return
	}
	if idx == "*" {
		for _, e := range arr {
			refWalk(e, next, out)
		}
		return
	}
	n, _ := strconv.Atoi(idx)
	if n < len(arr) {
		refWalk(arr[n], next, out)
	}
}
