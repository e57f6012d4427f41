package aliyuntext

import (
	"context"
	"testing"

	"gw/edge/guard"
)

// BenchmarkCheck is one TextModerationPlus check against the local mock:
// form body, ACS3 signature, loopback call, answer reading.
func BenchmarkCheck(b *testing.B) {
	base, _ := startMock(b)
	ck, err := New(guardrail(base, nil))
	if err != nil {
		b.Fatal(err)
	}
	req := &guard.Request{Texts: []guard.Text{{Role: guard.RoleUser, Data: []byte("a friendly question about the weather")}}}
	var v guard.Verdict
	b.ReportAllocs()
	for b.Loop() {
		v.Reset()
		if err := ck.Check(context.Background(), req, &v); err != nil {
			b.Fatal(err)
		}
	}
}
