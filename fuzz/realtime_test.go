package fuzz

import (
	"encoding/binary"
	"testing"

	"gw/edge"
)

func rtFrame(op byte, fin bool, payload []byte, masked bool) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	out := []byte{b0}
	m := byte(0)
	if masked {
		m = 0x80
	}
	switch n := len(payload); {
	case n < 126:
		out = append(out, m|byte(n))
	case n < 1<<16:
		out = append(out, m|126, byte(n>>8), byte(n))
	default:
		out = append(out, m|127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	if !masked {
		return append(out, payload...)
	}
	key := [4]byte{1, 2, 3, 4}
	out = append(out, key[:]...)
	for i, c := range payload {
		out = append(out, c^key[i&3])
	}
	return out
}

// FuzzRealtimeFrames: the /v1/realtime relay's frame scanner (both legs)
// never panics, never relays more than it was given, and gives the same
// verdict whatever the read sizes: relayed bytes, frames, close code and
// response.done usage are the same fed whole or byte by byte.
func FuzzRealtimeFrames(f *testing.F) {
	done := []byte(`{"type":"response.done","response":{"usage":{"total_tokens":30,"input_tokens":12,"output_tokens":18,"input_token_details":{"cached_tokens":4}}}}`)
	var seed []byte
	seed = append(seed, rtFrame(0x1, true, []byte(`{"type":"session.created"}`), false)...)
	seed = append(seed, rtFrame(0x1, false, done[:40], false)...)
	seed = append(seed, rtFrame(0x9, true, []byte("p"), false)...)
	seed = append(seed, rtFrame(0x0, true, done[40:], false)...)
	seed = append(seed, rtFrame(0x8, true, []byte{3, 0xe8}, false)...)
	f.Add(seed, false, 3)
	f.Add(rtFrame(0x1, true, []byte(`{"type":"response.create"}`), true), true, 1)
	f.Add(rtFrame(0x2, true, make([]byte, 300), true), true, 7)
	f.Add([]byte{0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 0}, false, 1)
	f.Add([]byte{0x88, 0x81, 1, 2, 3, 4, 5}, true, 2)
	f.Fuzz(func(t *testing.T, data []byte, fromCaller bool, step int) {
		if step < 1 || step > 1<<16 {
			step = 1 + (step&0xff+256)%256
		}
		whole := edge.ScanRealtimeFrames(data, len(data)+1, fromCaller)
		split := edge.ScanRealtimeFrames(data, step, fromCaller)
		if whole.Relayed > len(data) || split.Relayed > len(data) {
			t.Fatalf("relayed %d/%d of %d bytes", whole.Relayed, split.Relayed, len(data))
		}
		if whole.Relayed != split.Relayed || whole.Frames != split.Frames || whole.Usage != split.Usage ||
			whole.Closed != split.Closed || whole.CloseCode != split.CloseCode || (whole.Err == nil) != (split.Err == nil) {
			t.Fatalf("whole %+v; split by %d %+v", whole, step, split)
		}
	})
}
