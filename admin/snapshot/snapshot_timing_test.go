package snapshot

import (
	"testing"

	"gw/admin/resources"
)

// BenchmarkLoadCompile1kModels10kKeys is the reload cost of a large file:
// parse, interpolate, decode, validate, resolve, compile.
func BenchmarkLoadCompile1kModels10kKeys(b *testing.B) {
	data := bigFile(1000, 10000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r := resources.Load(data, testEnv)
		if r.Err() != nil {
			b.Fatal(r.Err())
		}
		if _, err := Compile(r.Resources, DefaultOptions()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSwap is the reload swap itself: publishing a compiled snapshot.
func BenchmarkSwap(b *testing.B) {
	r := resources.Load(bigFile(10, 10), testEnv)
	s, _ := Compile(r.Resources, DefaultOptions())
	var h Holder
	b.ReportAllocs()
	for b.Loop() {
		h.Store(s)
	}
}

func BenchmarkLookup(b *testing.B) {
	r := resources.Load(bigFile(1000, 10000), testEnv)
	s, _ := Compile(r.Resources, DefaultOptions())
	key := []byte("key-4242")
	b.ResetTimer()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if s.Lookup(key) == nil {
				b.Fatal("miss")
			}
		}
	})
}
