package fuzz

import (
	"bytes"
	"testing"

	"gw/admin/resources"
	"gw/edge/usage"
	"gw/edge/usage/gzipdelta"
	"gw/edge/usage/objstore"
	"gw/edge/usage/usagetest"
)

// FuzzNDJSONGzip: the object store's gzip writer (each line written
// against the line before, member by member) inflates, with the standard
// library's reader and its CRC check, to exactly the lines, whatever they
// hold: JSON records that agree or not, `,"` inside values, missing
// newlines, lines longer than the 32 KiB window.
func FuzzNDJSONGzip(f *testing.F) {
	f.Add([]byte("{\"a\":1,\"b\":\"x\"}\n{\"a\":2,\"b\":\"x\"}\n"), uint8(2))
	f.Add([]byte("{\"g\":[\"a\",\"b\"],\"x\":1}\n{\"g\":[\"b\"],\"y\":2,\"x\":1}"), uint8(1))
	f.Add([]byte(",\",\":,\"\n\n,\""), uint8(40))
	f.Fuzz(func(t *testing.T, body []byte, repeat uint8) {
		// Repeating the input makes lines that mostly agree, the case the
		// writer compares member by member; a large repeat count crosses
		// the 32 KiB window.
		var lines []byte
		for i := 0; i <= int(repeat%64); i++ {
			lines = append(lines, body...)
			if i%3 == 1 {
				lines = append(lines, '\n')
			}
		}
		var z gzipdelta.Writer
		gz := z.AppendLines(nil, lines)
		if got := usagetest.Gunzip(t, gz); !bytes.Equal(got, lines) {
			t.Fatalf("inflated %d bytes differ from the %d written", len(got), len(lines))
		}
		// Line by line as they are written (the object store's way):
		// the same member, twice over with the writer reused.
		var l gzipdelta.Lines
		for range 2 {
			var body []byte
			for _, line := range bytes.SplitAfter(lines, []byte("\n")) {
				if len(line) > 0 {
					c := len(body)
					body = l.Add(append(body, line...), c)
				}
			}
			if got := l.Finish(nil, body); !bytes.Equal(got, gz) {
				t.Fatalf("line by line: %d bytes, not AppendLines' %d", len(got), len(gz))
			}
		}
	})
}

// FuzzNDJSONRecordsGzip: the object store sink with compression: gzip
// (each record's unchanged parts copied from the line before and referred
// back to whole, usage.LineEncoder, the rest compared member by member)
// inflates to exactly the plain sink's lines, for records that repeat,
// change any part, or hold text that needs escaping.
func FuzzNDJSONRecordsGzip(f *testing.F) {
	sink := func(c string) *usage.Encoder {
		s, err := objstore.New(&resources.ObjectStoreExporter{Provider: resources.ObjectStoreS3, Bucket: "b", Endpoint: "http://127.0.0.1:1",
			Region: "us-east-1", AuthMode: resources.AuthModeStatic, Compression: c})
		if err != nil {
			f.Fatal(err)
		}
		return &usage.Encoder{Sink: s}
	}
	fuzzGzipMatchesPlain(f, sink(resources.CompressionNone), sink(resources.CompressionGzip))
}
