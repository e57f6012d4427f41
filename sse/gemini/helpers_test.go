package gemini

import (
	"bytes"
	"os"
	"testing"

	"gw/sse"
)

// readEvents returns the data of every event of a fixture.
func readEvents(tb testing.TB, path string) [][]byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	rd := sse.AcquireReader(bytes.NewReader(b))
	defer sse.ReleaseReader(rd)
	var out [][]byte
	for {
		ev, err := rd.Next()
		if err != nil {
			return out
		}
		out = append(out, bytes.Clone(ev.Data))
	}
}
