package edge

import (
	"testing"

	"gw/perf/load"
)

// BenchmarkScanChatRequest: the chat body checks on the perf suite's ~1 KB
// conversation (validation, policy fields, every message's role).
func BenchmarkScanChatRequest(b *testing.B) {
	body := load.DefaultBody
	var cr chatRequest
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if bad, err := scanChatRequest(body, &cr); err != nil || bad >= 0 {
			b.Fatal(err, bad)
		}
	}
}
