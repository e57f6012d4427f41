package bedrockguard

import (
	"context"
	"testing"

	"gw/edge/guard"
)

// BenchmarkCheck is one ApplyGuardrail check against the local mock:
// body, SigV4 signature, loopback call, answer reading.
func BenchmarkCheck(b *testing.B) {
	base, _ := startMock(b)
	c, err := NewChecker("bg", options(), func(k string) (string, bool) { return base, k == Env[0] })
	if err != nil {
		b.Fatal(err)
	}
	req := &guard.Request{Texts: []guard.Text{{Role: guard.RoleUser, Data: []byte("a friendly question about the weather")}}}
	var v guard.Verdict
	b.ReportAllocs()
	for b.Loop() {
		v.Reset()
		if err := c.Check(context.Background(), req, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSign is the SigV4 signature of one body (the SDK signer).
func BenchmarkSign(b *testing.B) {
	c, err := NewChecker("bg", options(), func(string) (string, bool) { return "", false })
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"source":"INPUT","content":[{"text":{"text":"a friendly question about the weather"}}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.sign(body); err != nil {
			b.Fatal(err)
		}
	}
}
