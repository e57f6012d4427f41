package gzipdelta_test

import (
	"bytes"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"gw/edge/usage"
	"gw/edge/usage/gzipdelta"
	"gw/edge/usage/usagetest"
)

// records is the NDJSON body of n usage records as the object_store sink
// writes it, with the variety a gateway's traffic has: distinct IDs and
// times, token counts of different widths, optional members coming and
// going, a failure with its message.
func records(n int) []byte {
	var body []byte
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		r := usagetest.Record(i * 37)
		r.OccurredAt = t0.Add(time.Duration(i) * 1234567 * time.Microsecond)
		r.Latency = time.Duration(100+i*7) * time.Millisecond
		if i%5 == 0 {
			r.UserID, r.UserName = "", ""
		}
		if i%7 == 3 {
			r.StatusCode, r.ErrorClass, r.ErrorMessage = 502, "upstream_error", `upstream said "no", then ","`
		}
		if i%11 == 0 {
			r.AppliedGuardrails = []string{"pii", "keyword"}
		}
		body = usage.NDJSON{}.AppendRecord(body, r)
	}
	return body
}

func TestAppendLinesRoundTrip(t *testing.T) {
	long := strings.Repeat("x", 40000)
	for name, body := range map[string][]byte{
		"empty":           nil,
		"one line":        []byte("{\"a\":1}\n"),
		"no final eol":    []byte("{\"a\":1}\n{\"a\":2}"),
		"blank lines":     []byte("\n\n{\"a\":1}\n\n"),
		"not json":        []byte("abc,\"def\":ghi\nabc,\"deg\":ghi,\"\n,\",\":\n"),
		"longer than 32K": []byte(`{"a":"` + long + `","b":1}` + "\n" + `{"a":"` + long + `","b":2}` + "\n"),
		"records":         records(512),
		"array members":   []byte(`{"g":["a","b","c"],"x":1}` + "\n" + `{"g":["a","c"],"x":1}` + "\n"),
	} {
		var z gzipdelta.Writer
		gz := z.AppendLines([]byte("prefix"), body)
		if !bytes.HasPrefix(gz, []byte("prefix")) {
			t.Fatalf("%s: dst not kept", name)
		}
		if got := usagetest.Gunzip(t, gz[len("prefix"):]); !bytes.Equal(got, body) {
			t.Fatalf("%s: inflated %d bytes differ from the %d written", name, len(got), len(body))
		}
	}
}

// Records repeat each other: the member-by-member comparison should keep
// most of a line as references.
func TestAppendLinesRatio(t *testing.T) {
	body := records(512)
	var z gzipdelta.Writer
	gz := z.AppendLines(nil, body)
	if ratio := float64(len(gz)) / float64(len(body)); ratio > 0.25 {
		t.Fatalf("compressed to %.2f of %d bytes; want ≤ 0.25", ratio, len(body))
	}
	t.Logf("%d → %d bytes (%.3f), %.0f bytes per record", len(body), len(gz), float64(len(gz))/float64(len(body)), float64(len(gz))/512)
}

func TestAppendLinesAllocs(t *testing.T) {
	body := records(64)
	var z gzipdelta.Writer
	buf := z.AppendLines(nil, body)
	if n := testing.AllocsPerRun(20, func() { buf = z.AppendLines(buf[:0], body) }); n != 0 {
		t.Fatalf("%v allocs per batch", n)
	}
}

// BenchmarkAppendLines: one 512-record NDJSON batch per op.
func BenchmarkAppendLines(b *testing.B) {
	body := records(512)
	var z gzipdelta.Writer
	var buf []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		buf = z.AppendLines(buf[:0], body)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*512), "ns/record")
	b.ReportMetric(float64(len(buf))/512, "bytes/record")
}

// TestCRC32Combine: the CRC of a then b from theirs and b's length, for
// every split of a stream (empty parts too).
func TestCRC32Combine(t *testing.T) {
	data := records(40)
	for _, at := range []int{0, 1, 7, 100, len(data) / 2, len(data) - 1, len(data)} {
		a, b := data[:at], data[at:]
		if got, want := gzipdelta.CRC32Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), len(b)), crc32.ChecksumIEEE(data); got != want {
			t.Errorf("split at %d: %08x, want %08x", at, got, want)
		}
	}
}

// TestStoredHeadThenBlock: a stored head, then a block begun on its own
// and grown span by span (Reserve), read back by a standard gunzip.
func TestStoredHeadThenBlock(t *testing.T) {
	head, body := []byte("head: known only at the end\n"), records(30)
	var z gzipdelta.Writer
	z.Open(0)
	crc := uint32(0)
	for at := 0; at < len(body); {
		end := min(at+700, len(body))
		z.Reserve(end - at)
		if at == 0 {
			z.Literals(body[:end])
		} else {
			z.Delta(body[at:end], body[at-500:end-500], 500)
		}
		crc = crc32.Update(crc, crc32.IEEETable, body[at:end])
		at = end
	}
	gz := gzipdelta.AppendStoredHead(nil, head)
	gz = append(gz, z.End()...)
	gz = gzipdelta.AppendTrailer(gz, gzipdelta.CRC32Combine(crc32.ChecksumIEEE(head), crc, len(body)), len(head)+len(body))
	if got := usagetest.Gunzip(t, gz); !bytes.Equal(got, append(head, body...)) {
		t.Fatalf("gunzip gave %d bytes, want %d", len(got), len(head)+len(body))
	}
}

// TestLinesMatchesAppendLines: compressed as written, a line at a time,
// the member is AppendLines' to the byte, batch after batch; a body not
// built through Add falls back to AppendLines.
func TestLinesMatchesAppendLines(t *testing.T) {
	var l gzipdelta.Lines
	var z gzipdelta.Writer
	for _, n := range []int{1, 60, 3} {
		all := records(n)
		var body []byte
		for _, line := range bytes.SplitAfter(all, []byte("\n")) {
			if len(line) > 0 {
				c := len(body)
				body = l.Add(append(body, line...), c)
			}
		}
		if got, want := l.Finish(nil, body), z.AppendLines(nil, all); !bytes.Equal(got, want) {
			t.Fatalf("%d records: %d bytes, want AppendLines' %d", n, len(got), len(want))
		}
	}
	other := records(5)
	if got := usagetest.Gunzip(t, l.Finish(nil, other)); !bytes.Equal(got, other) {
		t.Fatal("a body Add did not see did not round-trip")
	}
}

// TestAddParts: lines in parts inflate to the lines. The parts' claims are
// trusted (that is their point), but one that cannot hold is not acted
// on: a part marked as the line before's is one reference only when it
// has that part's length (else it is compared), a part marked as a repeat
// earlier in its line only when that place is in the line; part counts
// that change between lines fall back to comparing lines whole. A part
// that is what it claims costs no literals.
func TestAddParts(t *testing.T) {
	type line struct {
		parts []string
		same  uint32
		back  map[int]int32
	}
	cases := []struct {
		name  string
		lines []line
	}{
		{"copied parts", []line{
			{parts: []string{`{"id":"a1b2c3d4","re":"`, `a1b2c3d4`, `","x":1`, `,"call":"the same caller and route"}` + "\n"}},
			{parts: []string{`{"id":"e5f6a7b8","re":"`, `e5f6a7b8`, `","x":2`, `,"call":"the same caller and route"}` + "\n"}, same: 1 << 3, back: map[int]int32{1: 16}},
		}},
		{"false claims", []line{
			{parts: []string{`{"a":1`, `,"b":"short"}` + "\n"}},
			// Part 1 claims to be the line before's but is longer; part 0
			// claims a repeat reaching before the line.
			{parts: []string{`{"a":2`, `,"b":"longer value"}` + "\n"}, same: 1 << 1, back: map[int]int32{0: 40}},
			// Part 1 claims a repeat further back than the line starts,
			// and one beyond the window.
			{parts: []string{`{"a":3`, `,"b":"x"}` + "\n"}, back: map[int]int32{1: 7}},
			{parts: []string{`{"a":4`, `,"b":"x"}` + "\n"}, back: map[int]int32{1: 40000}},
		}},
		{"part count changes", []line{
			{parts: []string{`{"a":1,"b":2}` + "\n"}},
			{parts: []string{`{"a":1`, `,"b":2}` + "\n"}, same: 1 << 1},
			{parts: []string{`{"a":1`, `,"b":2`, `}` + "\n"}, same: 1<<1 | 1<<2},
		}},
	}
	for _, c := range cases {
		var (
			l          gzipdelta.Lines
			body, want []byte
		)
		for _, ln := range c.lines {
			p := gzipdelta.Parts{N: len(ln.parts), Same: ln.same}
			start := len(body)
			for k, s := range ln.parts {
				body = append(body, s...)
				p.End[k] = int32(len(body) - start)
				p.Back[k] = ln.back[k]
			}
			want = append(want, body[start:]...)
			body = l.AddParts(body, start, &p)
		}
		if got := usagetest.Gunzip(t, l.Finish(nil, body)); !bytes.Equal(got, want) {
			t.Fatalf("%s: inflates to %q, want %q", c.name, got, want)
		}
	}
	// What the parts say true is referred to: the second line of the
	// first case costs fewer bytes than compared whole.
	var whole, parted gzipdelta.Lines
	var wb, pb []byte
	for _, ln := range cases[0].lines {
		s := strings.Join(ln.parts, "")
		c := len(wb)
		wb = whole.Add(append(wb, s...), c)
		p := gzipdelta.Parts{N: len(ln.parts), Same: ln.same}
		c = len(pb)
		pb = append(pb, s...)
		for k := range ln.parts {
			p.End[k] = int32(len(strings.Join(ln.parts[:k+1], "")))
			p.Back[k] = ln.back[k]
		}
		pb = parted.AddParts(pb, c, &p)
	}
	if w, p := len(whole.Finish(nil, wb)), len(parted.Finish(nil, pb)); p >= w {
		t.Fatalf("in parts %d bytes, compared whole %d: the repeated ID was not referred to", p, w)
	}
}
