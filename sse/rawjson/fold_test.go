package rawjson_test

import (
	"encoding/json"
	"strings"
	"testing"

	"gw/sse/rawjson"
)

// foldStruct has the fields gw reads most, as a Go upstream would declare
// them: encoding/json fills each from the last member whose name equals the
// tag under folding.
type foldStruct struct {
	Model     json.RawMessage `json:"model"`
	Stream    json.RawMessage `json:"stream"`
	MaxTokens json.RawMessage `json:"max_tokens"`
	GenConfig json.RawMessage `json:"generationConfig"`
	Key       json.RawMessage `json:"ключ"`
}

var foldFields = []string{"model", "stream", "max_tokens", "generationConfig", "ключ"}

// checkFoldAgainstStruct checks Get, ScanTop and the Cursor's KeyIs against
// encoding/json decoding into foldStruct.
func checkFoldAgainstStruct(t *testing.T, data []byte) {
	t.Helper()
	var s foldStruct
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("encoding/json: %s", err)
	}
	want := []json.RawMessage{s.Model, s.Stream, s.MaxTokens, s.GenConfig, s.Key}
	vals := make([][]byte, len(foldFields))
	if err := rawjson.ScanTop(data, foldFields, vals); err != nil {
		t.Fatalf("ScanTop(%s): %s", data, err)
	}
	for i, k := range foldFields {
		got, _, ok := rawjson.Get(data, k)
		if ok != (want[i] != nil) || string(got) != string(want[i]) {
			t.Fatalf("Get(%s, %q) = %s, %v; encoding/json into a struct: %s", data, k, got, ok, want[i])
		}
		if string(vals[i]) != string(want[i]) {
			t.Fatalf("ScanTop(%s)[%q] = %s; encoding/json into a struct: %s", data, k, vals[i], want[i])
		}
		var c rawjson.Cursor
		c.Reset(data)
		c.Begin()
		var cur []byte
		for c.More() {
			key, esc := c.Key()
			v, _, _ := c.Value()
			// KeyIs takes the name in lower case: under folding the same.
			if rawjson.KeyIs(key, esc, `"`+strings.ToLower(k)+`"`) {
				cur = v
			}
		}
		if string(cur) != string(want[i]) {
			t.Fatalf("Cursor KeyIs(%s, %q) took %s; encoding/json into a struct: %s", data, k, cur, want[i])
		}
	}
}

func TestFoldMatchesEncodingJSONStructs(t *testing.T) {
	for _, doc := range []string{
		`{"model":"a"}`,
		`{"Model":"a"}`,
		`{"MODEL":"a","model":"b"}`,
		`{"model":"a","MoDeL":"b"}`,
		`{"\u004dodel":"a"}`,
		`{"mod\u0045L":"a"}`,
		`{"ſtream":true}`,
		`{"\u017ftream":true,"STREAM":false}`,
		`{"max_toKens":1}`,
		`{"max_to\u212aens":2}`,
		"{\"max_to\u212aens\":3}",
		`{"GENERATIONCONFIG":{},"generationconfig":[]}`,
		`{"КЛЮЧ":1,"Ключ":2}`,
		`{"model_":1,"mode":2,"modeł":3,"models":4}`,
		`{"model":null}`,
		`{}`,
	} {
		checkFoldAgainstStruct(t, []byte(doc))
	}
}

func TestValueIsKeepsCase(t *testing.T) {
	for _, tc := range []struct {
		val  string
		esc  bool
		want bool
	}{
		{`"user"`, false, true},
		{`"User"`, false, false},
		{`"USER"`, false, false},
		{`"\u0075ser"`, true, true},
		{`"\u0055ser"`, true, false},
	} {
		if got := rawjson.ValueIs([]byte(tc.val), tc.esc, `"user"`); got != tc.want {
			t.Errorf("ValueIs(%s) = %v; want %v", tc.val, got, tc.want)
		}
	}
}

func TestValidNames(t *testing.T) {
	for _, tc := range []struct {
		doc    string
		valid  bool
		folded string // the quoted name reported, "" for none
	}{
		{`{"model":"a","messages":[]}`, true, ""},
		{`{"model":"a","model":"b"}`, true, ""},        // exact duplicates: last wins everywhere
		{`{"model":"a","mod\u0065l":"b"}`, true, ""},   // one name, spelled with an escape
		{`{"model":"a","Model":"b"}`, true, `"Model"`}, // two spellings
		{`{"Model":"a","model":"b"}`, true, `"model"`}, // the later one is named
		{`{"Model":"a"}`, true, ""},                    // one spelling: every parser agrees on it
		{`{"stream":true,"ſtream":false}`, true, `"ſtream"`},
		{`{"stream":true,"\u017ftream":false}`, true, `"\u017ftream"`},
		{`{"a":{"b":[{"content":"x","Content":"y"}]}}`, true, `"Content"`},
		{`{"a":{"Content":"x"},"b":{"content":"y"}}`, true, ""}, // different objects
		{`{"userId":1,"userid":2}`, true, `"userid"`},
		{`{"userId":1,"user_id":2}`, true, ""},
		{`{"model":"a","Model":"b"`, false, ""},
		{`[{"x":1,"X":2}]`, true, `"X"`},
	} {
		valid, folded := rawjson.ValidNames([]byte(tc.doc))
		if valid != tc.valid || string(folded) != tc.folded {
			t.Errorf("ValidNames(%s) = %v, %s; want %v, %s", tc.doc, valid, folded, tc.valid, tc.folded)
		}
		if tc.valid {
			if got := rawjson.FoldConflict([]byte(tc.doc)); string(got) != tc.folded {
				t.Errorf("FoldConflict(%s) = %s; want %s", tc.doc, got, tc.folded)
			}
		}
	}
	// A large object goes through the map of folded names.
	var b strings.Builder
	b.WriteString(`{`)
	for i := 0; i < 100; i++ {
		b.WriteString(`"Key`)
		b.WriteByte(byte('a' + i%26))
		b.WriteByte(byte('a' + i/26))
		b.WriteString(`":1,`)
	}
	big := b.String()
	if _, folded := rawjson.ValidNames([]byte(big + `"z":2}`)); folded != nil {
		t.Errorf("large object without a conflict: %s", folded)
	}
	if _, folded := rawjson.ValidNames([]byte(big + `"KEYAA":2}`)); string(folded) != `"KEYAA"` {
		t.Errorf("large object: %s; want \"KEYAA\"", folded)
	}
}

// TestCursorNoteNames: a strict cursor notes the objects with odd names,
// walked with Key or inside a value taken whole, and their Conflict is
// FoldConflict's.
func TestCursorNoteNames(t *testing.T) {
	for _, tc := range []struct {
		doc, want string
	}{
		{`{"model":"a","messages":[{"role":"user","content":"Hi THERE"}]}`, ""},
		{`{"Model":"a"}`, ""},
		{`{"Model":"a","model":"b"}`, `"model"`},
		{`{"model":"a","tools":[{"parameters":{"userId":1,"userid":2}}]}`, `"userid"`},
		{`{"model":"a","tools":[{"parameters":{"userId":1,"user_id":2}}]}`, ""},
		{`{"model":"a","x":{"\u0061":1,"a":2}}`, ""},
		{`{"model":"a","x":{"é":1,"É":2}}`, `"É"`},
		{`{"model":"ABC","x":["Upper"]}`, ""},
		{`{"m":[{"a":{"B":1}},{"c":{"b":2,"B":3}}]}`, `"B"`},
		// Deeper than the notes' stacks: the whole document is walked.
		{`{"d":` + strings.Repeat(`{"d":`, 20) + `{"x":1,"X":2}` + strings.Repeat(`}`, 20) + `}`, `"X"`},
		{`{"d":` + strings.Repeat(`[{"d":`, 20) + `{"x":1,"Y":2}` + strings.Repeat(`}]`, 20) + `}`, ""},
		// More objects with odd names than the notes keep.
		{`{"m":[` + strings.Repeat(`{"A":1},`, 20) + `{"a":1,"A":2}]}`, `"A"`},
	} {
		var c rawjson.Cursor
		c.ResetStrict([]byte(tc.doc))
		c.NoteNames()
		c.Begin()
		for c.More() {
			c.Key()
			if c.Kind() == rawjson.Array {
				// Walk one level down, taking the elements whole.
				c.Begin()
				for c.More() {
					c.Value()
				}
				continue
			}
			c.Value()
		}
		if err := c.End(); err != nil {
			t.Fatalf("%s: %s", tc.doc, err)
		}
		if got := c.NameConflict(); string(got) != tc.want {
			t.Errorf("NameConflict(%s) = %s; want %s", tc.doc, got, tc.want)
		}
		if got := rawjson.FoldConflict([]byte(tc.doc)); string(got) != tc.want {
			t.Errorf("FoldConflict(%s) = %s; want %s", tc.doc, got, tc.want)
		}
		if _, got := rawjson.ValidNames([]byte(tc.doc)); string(got) != tc.want {
			t.Errorf("ValidNames(%s) = %s; want %s", tc.doc, got, tc.want)
		}
	}
}

func TestAppendNameLower(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"model"`, "model"},
		{`"MODEL"`, "model"},
		{`"mod\u0045l"`, "model"},
		{`"ſtream"`, "stream"},
		{`"max_to\u212aens"`, "max_tokens"},
		{`"finishReason"`, "finishreason"},
		{`"КЛЮЧ"`, "КЛЮЧ"}, // folds to no ASCII letter: kept as decoded
		{`""`, ""},
	} {
		got, err := rawjson.AppendNameLower(nil, []byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("AppendNameLower(%s) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{``, `"`, `x`, `"\x"`} {
		if _, err := rawjson.AppendNameLower(nil, []byte(bad)); err == nil {
			t.Errorf("AppendNameLower(%q) accepted", bad)
		}
	}
}
