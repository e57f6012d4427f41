package snapshot

import (
	"testing"
	"time"

	"gw/admin/resources"
)

// TestCompileCache: each alias gets the first enabled policy (file order)
// whose models cover it; a semantic policy carries its embedding model's
// plan and threshold; disabled policies cover nothing.
func TestCompileCache(t *testing.T) {
	s, err := Compile(loadFile(t, "testdata/every_field.yaml", map[string]string{"K": "caller"}), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	for alias, want := range map[string]string{"gpt": "exact-all", "claude": "exact-all", "embed": "sem", "group": "sem"} {
		got := ""
		if r := s.Plans[alias].Cache; r != nil {
			got = r.Name
		}
		if got != want {
			t.Errorf("%s: policy %q; want %q", alias, got, want)
		}
	}
	r := s.Plans["gpt"].Cache
	if r.Backend != resources.CacheBackendRedis || r.TTL != time.Minute || r.MaxEntryBytes != 4096 || r.Namespace != "ns:1" || r.Embed != nil {
		t.Fatalf("rule %+v", r)
	}
	if r := s.Plans["group"].Cache; r.Embed != s.Plans["embed"] || r.Threshold != 0.9 {
		t.Fatalf("semantic rule: embed %v threshold %v", r.Embed, r.Threshold)
	}

	res := &resources.Resources{CachePolicies: []*resources.CachePolicy{
		{Name: "off", Match: resources.CacheMatchExact, Enabled: false},
		{Name: "sem", Match: resources.CacheMatchSemantic, Enabled: true}, // no semantic block: the loader reported it
		{Name: "first", Match: resources.CacheMatchExact, Enabled: true, Models: []string{"a*"}, Namespace: "first"},
		{Name: "all", Match: resources.CacheMatchExact, Enabled: true, Namespace: "all", TTLSeconds: 1 << 62},
	}}
	plans := []*Plan{{Alias: "abc"}, {Alias: "xyz"}}
	compileCache(res, plans)
	if plans[0].Cache.Name != "first" || plans[1].Cache.Name != "all" {
		t.Fatalf("got %q, %q; want first, all", plans[0].Cache.Name, plans[1].Cache.Name)
	}
	if plans[1].Cache.TTL != maxCacheTTL {
		t.Fatalf("a huge ttl_seconds compiles to %v; want the century cap", plans[1].Cache.TTL)
	}
}
