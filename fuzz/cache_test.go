package fuzz

import (
	"bytes"
	"encoding/json"
	"sort"
	"testing"
	"time"
	"unicode/utf8"

	"gw/edge/cache"
)

var cacheSeeds = []string{
	`{"model":"gpt","messages":[{"role":"user","content":"hi"}],"temperature":0.2}`,
	`{ "messages" : [ { "role" : "user", "content" : "a \" b\\" } ], "model":"x", "user":"u", "stream":false }`,
	`{"model":"m","input":"text","max_output_tokens":5,"metadata":{"k":"v"}}`,
	`{"a":{"b":[1,2,{"c":null}]},"d":true,"e":-1.5e3}`,
	`{}`, `[]`, `"x"`, `{"a":1,}`, `{"a":"\u00e9"}`, `{"a":1}{}`, `{"a" 1}`, ``,
}

// FuzzCacheCanonical: AppendCanonical never panics, is deterministic, and
// a body re-encoded with its top-level members in another order and its
// whitespace changed gets the same key.
func FuzzCacheCanonical(f *testing.F) {
	for _, s := range cacheSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		a, ok := cache.AppendCanonical(nil, "chat_completions", "gpt", body)
		b, ok2 := cache.AppendCanonical(make([]byte, 0, 8), "chat_completions", "gpt", body)
		if ok != ok2 || !bytes.Equal(a, b) {
			t.Fatalf("not deterministic: %q", body)
		}
		if !ok {
			return
		}
		if k1, k2 := cache.Sum("ns", a), cache.Sum("ns", b); k1 != k2 {
			t.Fatal("Sum is not deterministic")
		}
		re, ok := reencode(body)
		if !ok {
			return
		}
		c, ok := cache.AppendCanonical(nil, "chat_completions", "gpt", re)
		if !ok || !bytes.Equal(a, c) {
			t.Fatalf("re-encoded body keys differently:\n%s\n%s\n%q\n%q", body, re, a, c)
		}
	})
}

// reencode writes body's top-level members in reverse key order, each
// value compacted, with whitespace around every top-level token. It
// declines bodies whose keys the encoder would respell (escapes, non-ASCII)
// or that repeat a key.
func reencode(body []byte) ([]byte, bool) {
	if !utf8.Valid(body) || !json.Valid(body) {
		return nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		for _, r := range k {
			if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
				return nil, false
			}
		}
		keys = append(keys, k)
	}
	// A repeated key collapses in the map: decline such bodies.
	if countTopKeys(body) != len(keys) {
		return nil, false
	}
	sort.Sort(sort.Reverse(sort.StringSlice(keys)))
	var out bytes.Buffer
	out.WriteString(" {\n")
	for i, k := range keys {
		if i > 0 {
			out.WriteString(" ,\n ")
		}
		out.WriteString(`"` + k + `"` + " :\t")
		var cv bytes.Buffer
		if err := json.Compact(&cv, m[k]); err != nil {
			return nil, false
		}
		out.Write(cv.Bytes())
	}
	out.WriteString("\r\n}\n")
	return out.Bytes(), true
}

// countTopKeys counts the top-level members of a valid JSON object.
func countTopKeys(body []byte) int {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return -1
	}
	n := 0
	for dec.More() {
		if _, err := dec.Token(); err != nil {
			return -1
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return -1
		}
		n++
	}
	return n
}

// FuzzCacheMemoryRoundTrip: whatever the memory store keeps comes back
// byte for byte; what exceeds a shard's share is not kept.
func FuzzCacheMemoryRoundTrip(f *testing.F) {
	f.Add([]byte(`{"id":"x"}`), []byte("application/json"), uint16(200))
	f.Fuzz(func(t *testing.T, body, ct []byte, status uint16) {
		m := cache.NewMemory(1 << 20)
		k := cache.Sum("ns", body)
		m.Set(&k, cache.Entry{StatusCode: int(status), ContentType: ct, Body: body}, time.Minute)
		e, st := m.Get(&k)
		if len(body)+len(ct)+160 > (1<<20)/64 {
			if st != cache.Miss {
				t.Fatal("an oversized entry was stored")
			}
			return
		}
		if st != cache.Hit || !bytes.Equal(e.Body, body) || !bytes.Equal(e.ContentType, ct) || e.StatusCode != int(status) {
			t.Fatalf("round trip: %v %+v", st, e)
		}
	})
}

// FuzzCacheRedisValue: ParseValue never panics on any bytes (a Redis key
// anyone could have written), and what AppendValue writes parses back.
func FuzzCacheRedisValue(f *testing.F) {
	f.Add([]byte{}, []byte("application/json"), []byte(`{"a":1}`), uint16(200), uint64(7))
	f.Add(cache.AppendValue(nil, 1, cache.Entry{StatusCode: 200, Body: []byte("{}")}), []byte{}, []byte{}, uint16(500), uint64(0))
	f.Fuzz(func(t *testing.T, raw, ct, body []byte, status uint16, check uint64) {
		if e, _, ok := cache.ParseValue(raw); ok && (e.StatusCode < 200 || e.StatusCode > 299 || len(e.ContentType) > 255) {
			t.Fatalf("parsed an impossible entry %+v", e)
		}
		if len(ct) > 255 {
			ct = ct[:255]
		}
		in := cache.Entry{StatusCode: int(status), ContentType: ct, Body: body}
		e, c, ok := cache.ParseValue(cache.AppendValue(nil, check, in))
		if want := status >= 200 && status <= 299; ok != want {
			t.Fatalf("status %d: ok %v", status, ok)
		}
		if ok && (c != check || !bytes.Equal(e.Body, body) || !bytes.Equal(e.ContentType, ct) || e.StatusCode != int(status)) {
			t.Fatalf("round trip: %+v %d", e, c)
		}
	})
}
