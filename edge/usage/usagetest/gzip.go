package usagetest

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"
)

// Gunzip inflates one gzip stream with the standard library's reader,
// which checks the trailer's CRC-32 and length, failing tb on any error.
func Gunzip(tb testing.TB, b []byte) []byte {
	tb.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		tb.Fatalf("not a gzip stream: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatalf("cannot inflate: %v", err)
	}
	return out
}
