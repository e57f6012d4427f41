package usage_test

import (
	"bytes"
	"math/bits"
	"testing"

	"gw/edge/usage"
	"gw/edge/usage/gzipdelta"
	"gw/edge/usage/usagetest"
)

// TestLineEncoderCopiesOnlyUnchanged: a line written by LineEncoder (parts
// unchanged from the record before copied from its line) is AppendJSON's
// line to the byte, whichever single field changes between records (every
// field of Record and of its tags, usagetest.Variants), and an unchanged
// part is marked as the line before's. Through gzipdelta.Lines.AddParts
// the member inflates to the same lines.
func TestLineEncoderCopiesOnlyUnchanged(t *testing.T) {
	for bi, base := range append(sampleRecords(), *usagetest.Record(0)) {
		names, vs := usagetest.Variants(t, &base)
		var (
			e          usage.LineEncoder
			l          gzipdelta.Lines
			body, want []byte
			checks     int
		)
		add := func(name string, r *usage.Record) *gzipdelta.Parts {
			t.Helper()
			c := len(body)
			var p *gzipdelta.Parts
			body, p = e.Append(body, r)
			line := append(usage.AppendJSON(nil, r), '\n')
			if !bytes.Equal(body[c:], line) {
				t.Fatalf("record %d, %s changed:\n got %s\nwant %s", bi, name, body[c:], line)
			}
			want = append(want, line...)
			body = l.AddParts(body, c, p)
			checks++
			return p
		}
		add("first", &base)
		again := base
		again.RequestID = usage.NewRequestID()
		if p := add("request ID", &again); bits.OnesCount32(p.Same) != usage.NumParts-1 || p.Same>>(p.N-usage.NumParts+1) != 1<<(usage.NumParts-1)-1 {
			t.Fatalf("record %d: only the head changed, but parts %b of %d were copied", bi, p.Same, p.N)
		}
		for i := range vs {
			add(names[i], &vs[i])
			add(names[i]+" again", &vs[i])
			add("back from "+names[i], &base)
		}
		if got := usagetest.Gunzip(t, l.Finish(nil, body)); !bytes.Equal(got, want) {
			t.Fatalf("record %d: the member inflates to %d bytes, not the %d lines' bytes", bi, len(got), len(want))
		}
		if checks < 3*40 {
			t.Fatalf("only %d lines checked", checks)
		}
	}
}

// BenchmarkLineEncoder: NDJSON lines of a loaded gateway's records, parts
// copied where unchanged, compressed as written (the archive's gzip).
func BenchmarkLineEncoder(b *testing.B) {
	batch := usagetest.Loaded(512)
	var (
		e    usage.LineEncoder
		l    gzipdelta.Lines
		body []byte
		out  []byte
	)
	b.ReportAllocs()
	for range b.N {
		body = body[:0]
		for i := range batch {
			c := len(body)
			var p *gzipdelta.Parts
			body, p = e.Append(body, &batch[i])
			body = l.AddParts(body, c, p)
		}
		out = l.Finish(out[:0], body)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/record")
	b.ReportMetric(float64(len(out))/float64(len(batch)), "bytes/record")
}
