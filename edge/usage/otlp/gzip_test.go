package otlp_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"gw/admin/resources"
	"gw/edge/usage"
	"gw/edge/usage/otlp"
	"gw/edge/usage/usagetest"
)

// TestGzipInflatesToWire: the gzip encoder's stream inflates to exactly
// the protobuf bytes of the batch, for batches where consecutive spans
// agree, differ in optional attributes, carry values longer than a back
// reference (258) or than a byte length (128), and lie more than deflate's
// 32 KiB window apart.
func TestGzipInflatesToWire(t *testing.T) {
	rec := func(i int) usage.Record { return *usagetest.Record(i) }
	long := func(r usage.Record, n int) usage.Record {
		r.ErrorMessage, r.StatusCode, r.ErrorClass = strings.Repeat("e", n), 502, "upstream_status"
		return r
	}
	tagged := func(r usage.Record) usage.Record {
		r.Tags = &resources.TelemetryTags{Kind: "byo", Featured: true, BYOLabel: "x"}
		r.AppliedGuardrails = []string{"pii", "kw"}
		r.GuardrailEnforcedHits = []usage.GuardrailHit{{Guardrail: "pii", Action: "mask"}}
		return r
	}
	same := rec(1)
	cases := []struct {
		name  string
		batch []usage.Record
	}{
		{"empty", nil},
		{"one", []usage.Record{rec(0)}},
		{"identical", []usage.Record{same, same, same, same}},
		{"varied", func() (b []usage.Record) {
			for i := 0; i < 600; i++ {
				r := rec(i)
				switch i % 7 {
				case 1:
					r = tagged(r)
				case 3:
					r = long(r, 300+i)
				case 5:
					r.AttemptKind, r.TotalTokens, r.TTFT = usage.AttemptFailed, 0, 0
				}
				b = append(b, r)
			}
			return b
		}()},
		{"beyond window", []usage.Record{rec(0), long(rec(1), 40000), rec(2), long(rec(3), 40000), rec(4)}},
		{"invalid utf-8", []usage.Record{func() usage.Record { r := rec(0); r.UserName = "caf\xc3"; return r }(), rec(1)}},
		{"epoch", []usage.Record{{OccurredAt: time.Unix(0, 0), AttemptKind: usage.AttemptFailed, StatusCode: 502}, rec(2)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := otlp.AppendRequest(c.batch, "gw")
			z := otlp.AppendRequestGzip(c.batch, "gw")
			if got := usagetest.Gunzip(t, z); !bytes.Equal(got, want) {
				t.Fatalf("inflated %d bytes differ from the %d wire bytes", len(got), len(want))
			}
			if len(c.batch) > 100 && len(z)*4 > len(want) {
				t.Errorf("%d bytes compressed to %d: under 4x on similar spans", len(want), len(z))
			}
		})
	}
}

// TestGzipSinkEncode: the sink with compression gzip emits that stream,
// appended to what dst held.
func TestGzipSinkEncode(t *testing.T) {
	batch := []usage.Record{*usagetest.Record(0), *usagetest.Record(1)}
	s := &usage.Encoder{Sink: otlp.New(&resources.OTLPHTTPExporter{Endpoint: "http://127.0.0.1:1/v1/traces", TimeoutMS: 1000, Compression: resources.OTLPCompressionGzip}, "gw")}
	out, err := s.Encode([]byte("keep"), batch)
	if err != nil {
		t.Fatal(err)
	}
	if string(out[:4]) != "keep" {
		t.Fatalf("dst overwritten: %q", out[:4])
	}
	if got := usagetest.Gunzip(t, out[4:]); !bytes.Equal(got, otlp.AppendRequest(batch, "gw")) {
		t.Fatal("sink's gzip body does not inflate to the batch's wire bytes")
	}
}
