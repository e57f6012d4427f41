package eventstream

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"testing"
	"testing/iotest"
)

const fixture = "../testdata/bedrock_converse_stream_text_then_tool_use.eventstream"

func readFixture(t testing.TB) []byte {
	b, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// chunked reads src in pieces of the given sizes, cycling.
type chunked struct {
	src   []byte
	sizes []int
	i     int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.src) == 0 {
		return 0, io.EOF
	}
	n := min(c.sizes[c.i%len(c.sizes)], len(p), len(c.src))
	c.i++
	copy(p, c.src[:n])
	c.src = c.src[n:]
	return n, nil
}

type event struct{ typ, payload string }

func decodeAll(t testing.TB, r io.Reader) []event {
	d := Acquire(r)
	defer Release(d)
	var out []event
	for {
		m, err := d.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("after %d messages: %v", len(out), err)
		}
		if string(m.MessageType) != "event" || string(m.ContentType) != "application/json" {
			t.Fatalf("message %d: type %q content-type %q", len(out), m.MessageType, m.ContentType)
		}
		out = append(out, event{string(m.EventType), string(m.Payload)})
	}
}

func TestFixtureAtRandomSplits(t *testing.T) {
	b := readFixture(t)
	want := decodeAll(t, bytes.NewReader(b))
	if len(want) != 26 || want[0].typ != "messageStart" || want[25].typ != "metadata" {
		t.Fatalf("got %d messages (%v ... %v); want 26 from messageStart to metadata", len(want), want[0], want[len(want)-1])
	}
	one := decodeAll(t, iotest.OneByteReader(bytes.NewReader(b)))
	if !equal(one, want) {
		t.Fatal("one byte at a time differs")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for seed := 0; seed < 200; seed++ {
		sizes := make([]int, 1+rng.IntN(8))
		for i := range sizes {
			sizes[i] = 1 + rng.IntN(400)
		}
		if got := decodeAll(t, &chunked{src: b, sizes: sizes}); !equal(got, want) {
			t.Fatalf("split sizes %v: messages differ", sizes)
		}
	}
}

func equal(a, b []event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestErrors(t *testing.T) {
	good := AppendMessage(nil, []Header{{":event-type", "messageStart"}, {":message-type", "event"}}, []byte(`{"role":"assistant"}`))
	f := func(name string, in []byte, max int, want error) {
		t.Helper()
		d := Acquire(bytes.NewReader(in))
		d.MaxMessageSize = max
		defer Release(d)
		var err error
		for err == nil {
			_, err = d.Next()
		}
		if !errors.Is(err, want) {
			t.Fatalf("%s: got %v; want %v", name, err, want)
		}
		if _, again := d.Next(); !errors.Is(again, want) {
			t.Fatalf("%s: error is not sticky: %v", name, again)
		}
	}
	f("clean", good, 0, io.EOF)
	bad := bytes.Clone(good)
	bad[9] ^= 1
	f("prelude crc", bad, 0, ErrPreludeCRC)
	bad = bytes.Clone(good)
	bad[len(bad)-6] ^= 1
	f("message crc", bad, 0, ErrMessageCRC)
	f("truncated", good[:len(good)-1], 0, ErrTruncated)
	f("truncated prelude", good[:5], 0, ErrTruncated)
	f("too large", good, 20, ErrMessageTooLarge)
	// A header block claiming more than the message holds.
	bad = AppendMessage(nil, nil, []byte("{}"))
	bad[7] = 200
	fixPreludeCRC(bad)
	f("headers length", bad, 0, ErrBadLength)
	// A header with an unknown value type (CRCs valid).
	msg := AppendMessage(nil, []Header{{"x", "y"}}, nil)
	msg[12+1+1] = 42
	fixMessageCRC(msg)
	f("header type", msg, 0, ErrBadHeader)
}

func fixPreludeCRC(b []byte) {
	h := crc(b[:8])
	b[8], b[9], b[10], b[11] = byte(h>>24), byte(h>>16), byte(h>>8), byte(h)
}

func fixMessageCRC(b []byte) {
	h := crc(b[:len(b)-4])
	n := len(b)
	b[n-4], b[n-3], b[n-2], b[n-1] = byte(h>>24), byte(h>>16), byte(h>>8), byte(h)
}

func TestHeaderTypes(t *testing.T) {
	// Every value type, as botocore's encoder writes them.
	h := []byte{}
	add := func(name string, typ byte, val []byte) {
		h = append(h, byte(len(name)))
		h = append(h, name...)
		h = append(h, typ)
		h = append(h, val...)
	}
	add("t", typeTrue, nil)
	add("f", typeFalse, nil)
	add("b", typeByte, []byte{1})
	add("s", typeShort, []byte{0, 2})
	add("i", typeInt, []byte{0, 0, 0, 3})
	add("l", typeLong, make([]byte, 8))
	add("y", typeBytes, []byte{0, 2, 'h', 'i'})
	add(":event-type", typeString, []byte{0, 4, 'd', 'o', 'n', 'e'})
	add("ts", typeTimestamp, make([]byte, 8))
	add("u", typeUUID, make([]byte, 16))
	var names []string
	if err := ForEachHeader(h, func(name []byte, _ byte, _ []byte) { names = append(names, string(name)) }); err != nil {
		t.Fatal(err)
	}
	if len(names) != 10 {
		t.Fatalf("got %v", names)
	}
	msg := appendRaw(nil, h, []byte("{}"))
	m, err := Decode(msg)
	if err != nil || string(m.EventType) != "done" || string(m.Payload) != "{}" {
		t.Fatalf("got %q %q %v", m.EventType, m.Payload, err)
	}
	// A block cut inside the last header is malformed.
	if err := ForEachHeader(h[:len(h)-1], func([]byte, byte, []byte) {}); !errors.Is(err, ErrBadHeader) {
		t.Fatalf("cut block: got %v; want ErrBadHeader", err)
	}
}

func TestDecodeAllocs(t *testing.T) {
	b := readFixture(t)
	r := bytes.NewReader(b)
	d := Acquire(r)
	defer Release(d)
	for { // warm the buffer
		if _, err := d.Next(); err != nil {
			break
		}
	}
	allocs := testing.AllocsPerRun(50, func() {
		r.Reset(b)
		d.Reset(r)
		for {
			if _, err := d.Next(); err != nil {
				break
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("got %v allocations per stream; want 0", allocs)
	}
}

func BenchmarkDecode(b *testing.B) {
	fx := readFixture(b)
	r := bytes.NewReader(fx)
	d := Acquire(r)
	defer Release(d)
	b.ReportAllocs()
	b.SetBytes(int64(len(fx)))
	n := 0
	for b.Loop() {
		r.Reset(fx)
		d.Reset(r)
		for {
			if _, err := d.Next(); err != nil {
				break
			}
			n++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/event")
}
