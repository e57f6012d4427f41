package fuzz

import (
	"bytes"
	"strings"
	"testing"

	"gw/admin/resources"
	"gw/edge/usage"
	"gw/edge/usage/otlp"
	"gw/edge/usage/usagetest"
)

// FuzzOTLPGzip: the OTLP sink's own gzip writer (each span's attributes
// written against the previous span's, fixed Huffman codes) inflates, with
// the standard library's reader and its CRC check, to exactly the
// uncompressed request, for spans that agree, differ in any field, change
// length across the varint boundaries, or lie beyond the 32 KiB window.
func FuzzOTLPGzip(f *testing.F) {
	plain := &usage.Encoder{Sink: otlp.New(&resources.OTLPHTTPExporter{Endpoint: "http://127.0.0.1:1/v1/traces", TimeoutMS: 1000}, "gw")}
	gz := &usage.Encoder{Sink: otlp.New(&resources.OTLPHTTPExporter{Endpoint: "http://127.0.0.1:1/v1/traces", TimeoutMS: 1000, Compression: resources.OTLPCompressionGzip}, "gw")}
	fuzzGzipMatchesPlain(f, plain, gz)
}

// fuzzGzipMatchesPlain fuzzes a sink's gzip encoder against its plain one
// on usagetest.FuzzBatch's records: the gzip inflates to exactly the plain
// payload, and so it does again for the next batch (an encoder starts
// each batch afresh).
func fuzzGzipMatchesPlain(f *testing.F, plain, gz *usage.Encoder) {
	f.Add("gpt", "chat.completions", "Zoë", "upstream returned 503", int64(10), 503, uint8(3))
	f.Add(strings.Repeat("m", 127), strings.Repeat("o", 128), "caf\xc3", "\xff\xfe", int64(-1), 200, uint8(0))
	f.Add(strings.Repeat("m", 127), "\",\"", "caf\xc3", "\xff\xfe\n", int64(-1), 200, uint8(0))
	f.Add("g", "", "", strings.Repeat("e", 33000), int64(1)<<40, 499, uint8(7))
	f.Fuzz(func(t *testing.T, model, op, user, msg string, tokens int64, status int, n uint8) {
		batch := usagetest.FuzzBatch(model, op, user, msg, tokens, status, n)
		for range 2 {
			want, err := plain.Encode(nil, batch)
			if err != nil {
				t.Fatal(err)
			}
			z, err := gz.Encode(nil, batch)
			if err != nil {
				t.Fatal(err)
			}
			if got := usagetest.Gunzip(t, z); !bytes.Equal(got, want) {
				t.Fatalf("inflated %d bytes differ from the %d plain bytes", len(got), len(want))
			}
		}
	})
}
