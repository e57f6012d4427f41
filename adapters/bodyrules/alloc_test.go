//go:build !race

package bodyrules

import "testing"

func TestApplyAllocs(t *testing.T) {
	r := Compile(&Config{ParamRenames: []Rename{{"max_tokens", "max_output"}}, TemperatureMax: fp(0.5),
		DefaultBodyFields: []Field{{"top_k", []byte(`5`)}}, ContentListToString: true})
	body := []byte(`{"model":"m","max_tokens":10,"temperature":0.9,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`)
	s := AcquireScratch()
	_, _ = r.Apply(body, All, s) // warm the buffers
	ReleaseScratch(s)
	n := testing.AllocsPerRun(100, func() {
		s := AcquireScratch()
		if _, err := r.Apply(body, All, s); err != nil {
			t.Fatal(err)
		}
		ReleaseScratch(s)
	})
	if n != 0 {
		t.Fatalf("Apply: %v allocs; want 0", n)
	}
}
