package resources

import (
	"os"
	"testing"
)

// BenchmarkLoadExample loads examples/gw.yaml: the describe-mode hooks in
// the field readers must cost nothing measurable on a normal load.
func BenchmarkLoadExample(b *testing.B) {
	data, err := os.ReadFile("../../examples/gw.yaml")
	if err != nil {
		b.Fatal(err)
	}
	env := func(name string) (string, bool) {
		return "bench-value-" + name + "-0123456789abcdef0123456789abcdef", true
	}
	b.ReportAllocs()
	for b.Loop() {
		if r := Load(data, env); r == nil {
			b.Fatal("nil result")
		}
	}
}
