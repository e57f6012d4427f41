package fuzz

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"gw/sse"
	"gw/sse/msgconv"
	"gw/sse/respconv"
	"gw/sse/transcode"
)

// splitDirections are the transcoders FuzzTranscoderSplit drives, the two
// the gateway composes for Responses callers on Anthropic upstreams (and
// the reverse) included.
var splitDirections = []struct {
	name string
	new  func() []transcode.Stream
}{
	{"chat→messages", func() []transcode.Stream { return []transcode.Stream{msgconv.NewChatToMessagesStream()} }},
	{"messages→chat", func() []transcode.Stream { return []transcode.Stream{msgconv.NewMessagesToChatStream()} }},
	{"chat→responses", func() []transcode.Stream { return []transcode.Stream{respconv.NewChatToResponsesStream()} }},
	{"responses→chat", func() []transcode.Stream { return []transcode.Stream{respconv.NewResponsesToChatStream()} }},
	{"messages→chat→responses", func() []transcode.Stream {
		return []transcode.Stream{msgconv.NewMessagesToChatStream(), respconv.NewChatToResponsesStream()}
	}},
	{"responses→chat→messages", func() []transcode.Stream {
		return []transcode.Stream{respconv.NewResponsesToChatStream(), msgconv.NewChatToMessagesStream()}
	}},
}

// FuzzTranscoderSplit: an upstream stream read in arbitrary pieces (as the
// network delivers it) gives the same transcoded output, byte for byte, as
// the same stream read whole — for every transcoder direction. Values
// derived from the clock or randomness (created timestamps, fallback ids
// for streams without ids) are masked before comparing.
func FuzzTranscoderSplit(f *testing.F) {
	paths, _ := filepath.Glob("../sse/testdata/*.sse")
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for d := range splitDirections {
			f.Add(b, uint8(d), uint64(i)*7919+1)
		}
	}
	f.Fuzz(func(t *testing.T, stream []byte, dir uint8, seed uint64) {
		d := splitDirections[int(dir)%len(splitDirections)]
		whole := splitRun(d.new(), bytes.NewReader(stream))
		pieces := splitRun(d.new(), &pieceReader{data: stream, seed: seed | 1})
		if a, b := splitMask(whole), splitMask(pieces); !bytes.Equal(a, b) {
			t.Fatalf("%s: output differs when the input arrives in pieces\nwhole:  %q\npieces: %q", d.name, a, b)
		}
	})
}

// splitRun feeds the events of r through the pipeline and ends it as the
// edge does: End when the input ends cleanly.
func splitRun(pipe []transcode.Stream, r io.Reader) []byte {
	for _, s := range pipe {
		s.Reset([]byte("alias"))
	}
	if rc, ok := pipe[0].(*respconv.ResponsesToChat); ok {
		rc.SetIncludeUsage(true)
	}
	rd := sse.AcquireReader(r)
	defer sse.ReleaseReader(rd)
	rd.MaxEventSize = 1 << 16
	var out []byte
	for {
		ev, err := rd.Next()
		if err != nil {
			break
		}
		push2(pipe, 0, ev.Name, ev.Data, &out)
	}
	for i := range pipe {
		buf := pipe[i].End(nil)
		if i == len(pipe)-1 {
			out = append(out, buf...)
			continue
		}
		for _, ev := range rcEvents(buf) {
			push2(pipe, i+1, ev[0], ev[1], &out)
		}
	}
	return out
}

// push2 hands one event to stage and everything it produces down the pipe.
func push2(pipe []transcode.Stream, stage int, name, data []byte, out *[]byte) {
	buf, _ := pipe[stage].Event(nil, name, data)
	if stage == len(pipe)-1 {
		*out = append(*out, buf...)
		return
	}
	for _, ev := range rcEvents(buf) {
		push2(pipe, stage+1, ev[0], ev[1], out)
	}
}

var splitVolatile = regexp.MustCompile(`"created(_at)?":\d+|gw[0-9a-f]+|[0-9a-f]{16}`)

func splitMask(b []byte) []byte { return splitVolatile.ReplaceAll(b, []byte("X")) }

// pieceReader returns data in pieces of 1 to 64 bytes chosen by an
// xorshift generator.
type pieceReader struct {
	data []byte
	seed uint64
}

func (p *pieceReader) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		return 0, io.EOF
	}
	p.seed ^= p.seed << 13
	p.seed ^= p.seed >> 7
	p.seed ^= p.seed << 17
	n := min(int(p.seed%64)+1, len(b), len(p.data))
	copy(b, p.data[:n])
	p.data = p.data[n:]
	return n, nil
}
