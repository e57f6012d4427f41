package gateway

import (
	"strconv"
	"testing"

	"gw/admin/store"
)

// BenchmarkCompileFull10k: a full recompile of 10,000 routes (plus their
// upstreams, services and plugin configs) from the decoded state. Target:
// <= 200 ms per op.
func BenchmarkCompileFull10k(b *testing.B) {
	st := routesState(10000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if s := Compile(st, 1); len(s.Routes) != 10000 {
			b.Fatal(len(s.Routes))
		}
	}
}

// BenchmarkRelist10k: the same from the stored bytes (decode + compile),
// what a relist after a lost watch costs.
func BenchmarkRelist10k(b *testing.B) {
	src := routesState(10000)
	var kvs []store.KV
	for _, coll := range []string{Upstreams, Services, PluginConfigs, Routes} {
		for _, r := range src.All(coll) {
			kvs = append(kvs, store.KV{Key: r.Key, Value: r.Raw, ModRev: r.ModRev})
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st := NewState("")
		for _, kv := range kvs {
			st.Apply(store.Event{Type: store.EventPut, KV: kv})
		}
		if s := Compile(st, 1); len(s.Routes) != 10000 {
			b.Fatal(len(s.Routes))
		}
	}
}

// BenchmarkIncrementalRoute10k: one route changes among 10,000 (decode the
// new body, recompile it, republish). Target: <= 5 ms per op.
func BenchmarkIncrementalRoute10k(b *testing.B) {
	st := routesState(10000)
	s := Compile(st, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := strconv.Itoa(i % 10000)
		st.Apply(store.Event{Type: store.EventPut, KV: store.KV{Key: "/routes/" + id,
			Value: []byte(`{"id":"` + id + `","uri":"/changed/` + id + `","upstream_id":"u1","priority":` + strconv.Itoa(i%5) + `}`), ModRev: int64(i + 2)}})
		s = s.WithRoutes(st, []string{id}, int64(i+2))
	}
	if len(s.Routes) != 10000 {
		b.Fatal(len(s.Routes))
	}
}
