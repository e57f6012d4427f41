package bodyrules

import (
	"testing"
)

func fp(v float64) *float64 { return &v }

func TestApply(t *testing.T) {
	f := func(name string, c Config, set Set, body, want string) {
		t.Helper()
		r := Compile(&c, "model", "stream")
		s := AcquireScratch()
		defer ReleaseScratch(s)
		got, err := r.Apply([]byte(body), set, s)
		if err != nil {
			t.Fatalf("%s: Apply: %v", name, err)
		}
		if string(got) != want {
			t.Fatalf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	clamp := Config{TemperatureMin: fp(0.2), TemperatureMax: fp(0.5)}
	f("no rules: body as is", Config{}, All, `{"temperature":1.5}`, `{"temperature":1.5}`)
	f("clamp above max", clamp, All, `{"model":"m","temperature":1.5}`, `{"model":"m","temperature":0.5}`)
	f("clamp below min", clamp, All, `{"temperature":0}`, `{"temperature":0.2}`)
	f("clamp inside kept", clamp, All, `{"temperature":0.3}`, `{"temperature":0.3}`)
	f("clamp null kept", clamp, All, `{"temperature":null}`, `{"temperature":null}`)
	f("clamp off in set", clamp, Flatten|Renames|Defaults, `{"temperature":1.5}`, `{"temperature":1.5}`)
	f("rename", Config{ParamRenames: []Rename{{"max_tokens", "max_output"}}}, All,
		`{"max_tokens":5,"x":1}`, `{"max_output":5,"x":1}`)
	f("rename chain in file order", Config{ParamRenames: []Rename{{"a", "b"}, {"b", "c"}}}, All,
		`{"a":1}`, `{"c":1}`)
	f("rename absent source", Config{ParamRenames: []Rename{{"a", "b"}}}, All, `{"x":1}`, `{"x":1}`)
	f("rename replaces target", Config{ParamRenames: []Rename{{"a", "b"}}}, All, `{"b":0,"a":1}`, `{"b":1}`)
	f("clamp after rename", Config{ParamRenames: []Rename{{"temp", "temperature"}}, TemperatureMax: fp(0.5)}, All,
		`{"temp":0.9}`, `{"temperature":0.5}`)
	f("defaults added when absent", Config{DefaultBodyFields: []Field{{"top_k", []byte(`5`)}, {"metadata", []byte(`{"user_id":"u"}`)}}}, All,
		`{"top_k":1}`, `{"top_k":1,"metadata":{"user_id":"u"}}`)
	f("reserved defaults dropped", Config{DefaultBodyFields: []Field{{"model", []byte(`"x"`)}, {"stream", []byte(`true`)}}}, All,
		`{}`, `{}`)
	f("default after rename sees the new key", Config{ParamRenames: []Rename{{"a", "b"}}, DefaultBodyFields: []Field{{"b", []byte(`0`)}}}, All,
		`{"a":1}`, `{"b":1}`)
	flat := Config{ContentListToString: true}
	f("flatten text blocks", flat, All,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}]}]}`,
		`{"messages":[{"role":"user","content":"ab"}]}`)
	f("flatten keeps mixed lists", flat, All,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{}}]},{"role":"assistant","content":"s"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{}}]},{"role":"assistant","content":"s"}]}`)
	f("flatten off in set", flat, Renames, `{"messages":[{"content":[{"type":"text","text":"a"}]}]}`,
		`{"messages":[{"content":[{"type":"text","text":"a"}]}]}`)
}

func TestApplyRejectsNonObjects(t *testing.T) {
	r := Compile(&Config{DefaultBodyFields: []Field{{"a", []byte(`1`)}}})
	s := AcquireScratch()
	defer ReleaseScratch(s)
	for _, body := range []string{`[]`, `"x"`, `{"a":`, ``} {
		if _, err := r.Apply([]byte(body), All, s); err == nil {
			t.Fatalf("Apply(%q): no error", body)
		}
	}
}

func TestCompileNil(t *testing.T) {
	if r := Compile(&Config{DefaultBodyFields: []Field{{"model", []byte(`"x"`)}}}, "model"); r != nil {
		t.Fatalf("Compile of reserved-only defaults = %+v; want nil", r)
	}
	var r *Rules
	if r.Has(All) || r.FlattensContent() || r.Clamps() || r.Clamp(nil, []byte("2")) != nil {
		t.Fatal("nil Rules applies something")
	}
}

func BenchmarkApply(b *testing.B) {
	r := Compile(&Config{ParamRenames: []Rename{{"max_tokens", "max_output"}}, TemperatureMax: fp(0.5),
		DefaultBodyFields: []Field{{"top_k", []byte(`5`)}}, ContentListToString: true})
	body := []byte(`{"model":"m","max_tokens":10,"temperature":0.9,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		s := AcquireScratch()
		if _, err := r.Apply(body, All, s); err != nil {
			b.Fatal(err)
		}
		ReleaseScratch(s)
	}
}
