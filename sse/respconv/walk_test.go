package respconv

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// chunkSeeds reads the chat chunk shapes shared by the chunk readers'
// tests (sse/chatchunk/testdata/seeds.txt, one chunk a line) and the chunks
// of the recorded chat streams.
func chunkSeeds(tb testing.TB) (seeds []string, streams [][]string) {
	tb.Helper()
	b, err := os.ReadFile("../chatchunk/testdata/seeds.txt")
	if err != nil {
		tb.Fatal(err)
	}
	seeds = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	files, _ := filepath.Glob("../testdata/*chat*.sse")
	if len(files) == 0 {
		tb.Fatal("no recorded chat streams")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var evs []string
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(strings.TrimSuffix(line, "\r"), "data: "); ok {
				evs = append(evs, d)
			}
		}
		streams = append(streams, evs)
	}
	return seeds, streams
}

// walkIDs are what differs between two streams of the same chunks: ids
// generated from the clock and a sequence, and created_at.
var walkIDs = regexp.MustCompile(`(resp|msg|rs|fc|call)_[0-9a-f]{16}|"created_at":[0-9]+`)

// checkWalk feeds chunks to one stream through Event (the walk, with its
// fallback) and to another that reads every chunk the generic way, and
// fails unless both write the same bytes and end in the same state; a valid
// JSON object must never need the fallback.
func checkWalk(t *testing.T, chunks ...[]byte) {
	t.Helper()
	fast, slow := NewChatToResponsesStream().(*ChatToResponses), NewChatToResponsesStream().(*ChatToResponses)
	defer ReleaseStream(fast)
	defer ReleaseStream(slow)
	fast.Reset([]byte("m"))
	slow.Reset([]byte("m"))
	slow.noWalk = true
	var a, b []byte
	for _, ch := range chunks {
		d := bytes.TrimSpace(ch)
		if len(d) > 0 && d[0] == '{' && json.Valid(d) && !fast.walker.Walk(d, &fast.ck, acceptChoice) {
			t.Fatalf("walk rejects valid JSON %s", d)
		}
		var errA, errB error
		a, errA = fast.Event(a, nil, ch)
		b, errB = slow.Event(b, nil, ch)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("chunk %s: errors differ: %v / %v", ch, errA, errB)
		}
	}
	a, b = fast.End(a), slow.End(b)
	a, b = walkIDs.ReplaceAll(a, nil), walkIDs.ReplaceAll(b, nil)
	if !bytes.Equal(a, b) {
		t.Fatalf("outputs differ for %q\nwalk:\n%s\ngeneric:\n%s", chunks, a, b)
	}
	ua, oka := fast.Usage()
	ub, okb := slow.Usage()
	if fast.content != slow.content || ua != ub || oka != okb || fast.finish != slow.finish {
		t.Fatalf("states differ for %q", chunks)
	}
}

// TestWalkMatchesGeneric: every chunk shape alone, twice (message_start
// is written once, a finish may come), and every recorded stream.
func TestWalkMatchesGeneric(t *testing.T) {
	seeds, streams := chunkSeeds(t)
	for _, s := range seeds {
		checkWalk(t, []byte(s))
		checkWalk(t, []byte(s), []byte(s))
	}
	for _, evs := range streams {
		chunks := make([][]byte, len(evs))
		for i, e := range evs {
			chunks[i] = []byte(e)
		}
		checkWalk(t, chunks...)
	}
}

// FuzzWalk: on any two chunks the single-pass walk (with its fallback and
// its skip of a prefix repeated from the chunk before) and the generic
// reading write the same events; on a valid JSON object the walk never
// falls back.
func FuzzWalk(f *testing.F) {
	seeds, _ := chunkSeeds(f)
	for i, s := range seeds {
		f.Add([]byte(s), []byte(s))
		f.Add([]byte(s), []byte(seeds[(i+1)%len(seeds)]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		checkWalk(t, a, b, b)
	})
}
