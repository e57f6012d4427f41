package azuretext

import (
	"context"
	"strings"
	"testing"

	"gw/edge/guard"
)

// BenchmarkCheck is one check of a short text against the local mock: the
// kind's own cost (body, answer reading) plus one loopback HTTP call.
func BenchmarkCheck(b *testing.B) {
	base, _ := startMock(b)
	ck, err := New(guardrail(base, nil))
	if err != nil {
		b.Fatal(err)
	}
	req := &guard.Request{Texts: []guard.Text{user("a friendly question about the weather")}}
	var v guard.Verdict
	b.ReportAllocs()
	for b.Loop() {
		v.Reset()
		if err := ck.Check(context.Background(), req, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJudge reads one analyze answer (no network).
func BenchmarkJudge(b *testing.B) {
	ck, err := New(guardrail("http://127.0.0.1:1", nil))
	if err != nil {
		b.Fatal(err)
	}
	c := ck.(*Checker)
	resp := []byte(`{"blocklistsMatch":[],"categoriesAnalysis":[{"category":"Hate","severity":0},{"category":"Sexual","severity":0},{"category":"SelfHarm","severity":0},{"category":"Violence","severity":0}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if rule, err := c.Judge(resp); err != nil || rule != "" {
			b.Fatal(rule, err)
		}
	}
}

func BenchmarkJoinChunks(b *testing.B) {
	req := &guard.Request{Texts: []guard.Text{user(strings.Repeat("a", 6000)), user(strings.Repeat("é", 6000))}}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = Join(buf[:0], req, false)
	}
}
