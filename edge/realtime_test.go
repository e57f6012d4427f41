package edge

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"gw/adapters"
)

// wsFrame builds one frame; masked frames use key.
func wsFrame(op byte, fin bool, payload []byte, masked bool, key [4]byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	out := []byte{b0}
	mbit := byte(0)
	if masked {
		mbit = 0x80
	}
	switch n := len(payload); {
	case n < 126:
		out = append(out, mbit|byte(n))
	case n < 1<<16:
		out = append(out, mbit|126, byte(n>>8), byte(n))
	default:
		out = append(out, mbit|127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	if !masked {
		return append(out, payload...)
	}
	out = append(out, key[:]...)
	for i, c := range payload {
		out = append(out, c^key[i&3])
	}
	return out
}

var testKey = [4]byte{0x37, 0xfa, 0x21, 0x3d}

func TestParseWSHeader(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     []byte
		ok     bool
		err    error
		length int64
		size   int
	}{
		{"short", []byte{0x81}, false, nil, 0, 0},
		{"text 5", []byte{0x81, 5}, true, nil, 5, 2},
		{"16-bit length", []byte{0x82, 126, 1, 0}, true, nil, 256, 4},
		{"16-bit length partial", []byte{0x82, 126, 1}, false, nil, 0, 0},
		{"64-bit length", []byte{0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0}, true, nil, 65536, 10},
		{"64-bit length with the top bit", []byte{0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 0}, false, errWSLength, 0, 0},
		{"masked", []byte{0x81, 0x85, 1, 2, 3, 4}, true, nil, 5, 6},
		{"masked partial key", []byte{0x81, 0x85, 1, 2}, false, nil, 0, 0},
		{"rsv1 (deflate not negotiated)", []byte{0xc1, 1}, false, errWSReserved, 0, 0},
		{"reserved opcode", []byte{0x83, 0}, false, errWSOpcode, 0, 0},
		{"fragmented ping", []byte{0x09, 0}, false, errWSControl, 0, 0},
		{"long close", []byte{0x88, 126, 0, 200}, false, errWSControl, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, ok, err := parseWSHeader(tc.in)
			if ok != tc.ok || !errors.Is(err, tc.err) || (ok && (h.length != tc.length || h.size != tc.size)) {
				t.Fatalf("got ok=%v err=%v length=%d size=%d; want ok=%v err=%v length=%d size=%d", ok, err, h.length, h.size, tc.ok, tc.err, tc.length, tc.size)
			}
		})
	}
}

const responseDone = `{"type":"response.done","event_id":"event_1","response":{"id":"resp_1","object":"realtime.response","status":"completed","output":[{"type":"message","content":[{"type":"audio","transcript":"` +
	`hello there, this transcript is long enough to push the usage object past the scanner's prefix window"}]}],` +
	`"usage":{"total_tokens":30,"input_tokens":12,"output_tokens":18,"input_token_details":{"cached_tokens":4,"text_tokens":8,"audio_tokens":4},"output_token_details":{"text_tokens":6,"audio_tokens":12}}}}`

// feedAll feeds p to s in pieces of at most step bytes, the way reads
// arrive, and returns how many bytes it allowed to relay.
func feedAll(t *testing.T, s *wsScanner, p []byte, step int) (int, error) {
	t.Helper()
	var pending []byte
	relayed := 0
	for len(p) > 0 || len(pending) > 0 {
		n := min(step, len(p))
		pending = append(pending, p[:n]...)
		p = p[n:]
		k, err := s.feed(pending)
		relayed += k
		pending = append(pending[:0], pending[k:]...)
		if err != nil {
			return relayed, err
		}
		if n == 0 {
			break
		}
	}
	return relayed, nil
}

func TestWSScannerUsage(t *testing.T) {
	audio := []byte(`{"type":"response.audio.delta","delta":"` + strings.Repeat("QUJD", 300) + `"}`)
	var stream []byte
	stream = append(stream, wsFrame(wsOpText, true, []byte(`{"type":"session.created","session":{"model":"m"}}`), false, testKey)...)
	stream = append(stream, wsFrame(wsOpText, true, audio, false, testKey)...)
	stream = append(stream, wsFrame(wsOpPing, true, []byte("p"), false, testKey)...)
	// The response.done event split over three frames, a pong between them.
	d := []byte(responseDone)
	stream = append(stream, wsFrame(wsOpText, false, d[:50], false, testKey)...)
	stream = append(stream, wsFrame(wsOpPong, true, nil, false, testKey)...)
	stream = append(stream, wsFrame(wsOpContinuation, false, d[50:200], false, testKey)...)
	stream = append(stream, wsFrame(wsOpContinuation, true, d[200:], false, testKey)...)
	stream = append(stream, wsFrame(wsOpBinary, true, []byte{1, 2, 3}, false, testKey)...)
	// A short response.done, wholly inside the prefix window.
	stream = append(stream, wsFrame(wsOpText, true, []byte(`{"type":"response.done","response":{"usage":{"input_tokens":1,"output_tokens":2,"total_tokens":3}}}`), false, testKey)...)
	// Text that merely mentions the event is not one.
	stream = append(stream, wsFrame(wsOpText, true, []byte(`{"type":"response.text.delta","delta":"\"response.done\" said the model"}`), false, testKey)...)
	stream = append(stream, wsFrame(wsOpClose, true, []byte{0x03, 0xe8, 'o', 'k'}, false, testKey)...)
	for _, step := range []int{1, 3, 7, 64, 4096} {
		s := wsScanner{usage: true}
		n, err := feedAll(t, &s, stream, step)
		if err != nil || n != len(stream) {
			t.Fatalf("step %d: relayed %d of %d, err %v", step, n, len(stream), err)
		}
		want := adapters.Usage{Prompt: 13, Completion: 20, Total: 33, Cached: 4}
		if s.sum != want || s.events != 2 || s.unread != 0 {
			t.Fatalf("step %d: usage %+v events %d unread %d; want %+v, 2, 0", step, s.sum, s.events, s.unread, want)
		}
		if !s.closed || s.closeCode != 1000 || s.messages != 6 {
			t.Fatalf("step %d: closed %v code %d messages %d", step, s.closed, s.closeCode, s.messages)
		}
	}
}

func TestWSScannerErrors(t *testing.T) {
	text := func(masked bool) []byte { return wsFrame(wsOpText, true, []byte("{}"), masked, testKey) }
	for _, tc := range []struct {
		name   string
		masked bool
		in     []byte
		err    error
	}{
		{"unmasked from the caller", true, text(false), errWSMask},
		{"masked from the upstream", false, text(true), errWSMask},
		{"continuation first", false, wsFrame(wsOpContinuation, true, nil, false, testKey), errWSContinuation},
		{"new message inside a fragmented one", false, append(wsFrame(wsOpText, false, []byte("a"), false, testKey), text(false)...), errWSInterleaved},
		{"data after close", false, append(wsFrame(wsOpClose, true, nil, false, testKey), text(false)...), errWSAfterClose},
		{"1-byte close payload", false, wsFrame(wsOpClose, true, []byte{3}, false, testKey), errWSClosePayload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := wsScanner{masked: tc.masked, usage: !tc.masked}
			n, err := s.feed(tc.in)
			if err == nil && n < len(tc.in) {
				_, err = s.feed(tc.in[n:]) // feed stops after a close frame
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v; want %v", err, tc.err)
			}
		})
	}
	// A masked close frame's code is read through the mask.
	s := wsScanner{masked: true}
	if _, err := s.feed(wsFrame(wsOpClose, true, []byte{0x0f, 0xa1}, true, testKey)); err != nil || s.closeCode != 4001 {
		t.Fatalf("masked close: code %d err %v", s.closeCode, err)
	}
}

func TestAppendCloseFrame(t *testing.T) {
	for _, masked := range []bool{false, true} {
		f := appendCloseFrame(nil, 1001, "bye", masked, testKey)
		s := wsScanner{masked: masked}
		if n, err := s.feed(f); err != nil || n != len(f) || s.closeCode != 1001 {
			t.Fatalf("masked=%v: n %d err %v code %d", masked, n, err, s.closeCode)
		}
	}
	long := appendCloseFrame(nil, 1000, strings.Repeat("x", 300), false, testKey)
	if _, ok, err := parseWSHeader(long); !ok || err != nil || len(long) != 2+125 {
		t.Fatalf("long reason: %d bytes, err %v", len(long), err)
	}
}

func TestRealtimeSubprotocols(t *testing.T) {
	key, ok := subprotocolKey([]byte("realtime, openai-insecure-api-key.sk-abc ,openai-beta.realtime-v1"))
	if !ok || string(key) != "sk-abc" {
		t.Fatalf("key %q ok %v", key, ok)
	}
	if _, ok := subprotocolKey([]byte("realtime, openai-insecure-api-key.")); ok {
		t.Fatal("an empty key was taken")
	}
	for in, want := range map[string]string{
		"openai-insecure-api-key.k, realtime":                "realtime",
		"openai-insecure-api-key.k, openai-beta.realtime-v1": "openai-beta.realtime-v1",
		"openai-insecure-api-key.k":                          "",
		"":                                                   "",
	} {
		if got := chooseSubprotocol([]byte(in)); got != want {
			t.Fatalf("chooseSubprotocol(%q) = %q; want %q", in, got, want)
		}
	}
}

// relayPair is a session's two TCP legs over loopback: the test holds the
// far ends (caller side and upstream side).
func relayPair(t testing.TB) (s *rtSession, callerFar, upFar net.Conn) {
	t.Helper()
	pair := func() (near, far net.Conn) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ch := make(chan net.Conn)
		go func() { c, _ := ln.Accept(); ch <- c }()
		far, err = net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return <-ch, far
	}
	callerNear, callerFar := pair()
	upNear, upFar := pair()
	s = &rtSession{caller: callerNear, up: upNear}
	s.fromCaller.scan = wsScanner{masked: true}
	s.fromUp.scan = wsScanner{usage: true}
	s.fromCaller.buf, s.fromUp.buf = acquireRelayBuf(), acquireRelayBuf()
	t.Cleanup(func() { callerNear.Close(); callerFar.Close(); upNear.Close(); upFar.Close() })
	return s, callerFar, upFar
}

// TestRealtimePump: both legs relay frames byte for byte; a close from the
// caller travels to the upstream and the upstream's answer back; an
// upstream that vanishes gets the caller a 1011 close from gw.
func TestRealtimePump(t *testing.T) {
	s, callerFar, upFar := relayPair(t)
	done := make(chan struct{}, 2)
	go func() { s.pump(&s.fromCaller, s.caller, s.up, true); done <- struct{}{} }()
	go func() { s.pump(&s.fromUp, s.up, s.caller, false); done <- struct{}{} }()

	in := append(wsFrame(wsOpText, true, []byte(`{"type":"response.create"}`), true, testKey), wsFrame(wsOpBinary, true, []byte{9, 9}, true, testKey)...)
	if _, err := callerFar.Write(in); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(in))
	if _, err := io.ReadFull(upFar, got); err != nil || !bytes.Equal(got, in) {
		t.Fatalf("upstream got %x (%v); want the caller's frames unchanged %x", got, err, in)
	}
	out := append(wsFrame(wsOpText, true, []byte(responseDone), false, testKey), wsFrame(wsOpClose, true, []byte{0x03, 0xe8}, false, testKey)...)
	if _, err := upFar.Write(out); err != nil {
		t.Fatal(err)
	}
	got = make([]byte, len(out))
	if _, err := io.ReadFull(callerFar, got); err != nil || !bytes.Equal(got, out) {
		t.Fatalf("caller got %x (%v); want the upstream's frames unchanged", got, err)
	}
	<-done // the upstream leg ends with its close frame
	closeBack := wsFrame(wsOpClose, true, []byte{0x03, 0xe8}, true, testKey)
	if _, err := callerFar.Write(closeBack); err != nil {
		t.Fatal(err)
	}
	<-done
	if s.ended() != nil || s.fromUp.scan.sum.Total != 30 || s.callerClose.Load() != 1000 || s.upClose.Load() != 1000 {
		t.Fatalf("end %v usage %+v closes %d/%d", s.ended(), s.fromUp.scan.sum, s.callerClose.Load(), s.upClose.Load())
	}

	// The upstream vanishes without a close frame.
	s2, callerFar2, upFar2 := relayPair(t)
	go func() { s2.pump(&s2.fromCaller, s2.caller, s2.up, true); done <- struct{}{} }()
	go func() { s2.pump(&s2.fromUp, s2.up, s2.caller, false); done <- struct{}{} }()
	upFar2.Close()
	<-done
	<-done
	_ = callerFar2.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 64)
	n, _ := io.ReadAtLeast(callerFar2, b, 4)
	sc := wsScanner{}
	if _, err := sc.feed(b[:n]); err != nil || !sc.closed || sc.closeCode != wsCloseInternal || s2.ended() != endUpstreamGone {
		t.Fatalf("caller got %x (%v); want a 1011 close; end %v", b[:n], err, s2.ended())
	}
}

// TestRealtimeIdle: a session that relays nothing for the idle timeout is
// closed by gw on both sides with 1001.
func TestRealtimeIdle(t *testing.T) {
	s, callerFar, upFar := relayPair(t)
	s.idle = 100 * time.Millisecond
	s.last.Store(time.Now().UnixNano())
	s.addTimer(time.AfterFunc(s.idle, s.checkIdle))
	done := make(chan struct{}, 2)
	go func() { s.pump(&s.fromCaller, s.caller, s.up, true); done <- struct{}{} }()
	go func() { s.pump(&s.fromUp, s.up, s.caller, false); done <- struct{}{} }()
	<-done
	<-done
	if s.ended() != endIdle {
		t.Fatalf("end %v; want idle", s.ended())
	}
	for _, c := range []struct {
		conn   net.Conn
		masked bool
	}{{callerFar, false}, {upFar, true}} {
		_ = c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		b := make([]byte, 64)
		n, _ := io.ReadAtLeast(c.conn, b, 4)
		sc := wsScanner{masked: c.masked}
		if _, err := sc.feed(b[:n]); err != nil || sc.closeCode != wsCloseGoingAway {
			t.Fatalf("masked=%v got %x (%v); want a 1001 close", c.masked, b[:n], err)
		}
	}
}

// TestRealtimeMaxSession: a busy session is still closed at max_session,
// on both sides with 1001, between frames.
func TestRealtimeMaxSession(t *testing.T) {
	s, callerFar, upFar := relayPair(t)
	s.addTimer(time.AfterFunc(150*time.Millisecond, func() { s.stop(endMaxSession) }))
	done := make(chan struct{}, 2)
	go func() { s.pump(&s.fromCaller, s.caller, s.up, true); done <- struct{}{} }()
	go func() { s.pump(&s.fromUp, s.up, s.caller, false); done <- struct{}{} }()
	frame := wsFrame(wsOpText, true, []byte(`{"type":"response.audio.delta","delta":"AAAA"}`), false, testKey)
	go func() {
		for i := 0; i < 1000; i++ {
			if _, err := upFar.Write(frame); err != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	<-done
	<-done
	if s.ended() != endMaxSession {
		t.Fatalf("end %v; want max_session", s.ended())
	}
	_ = s.caller.Close() // the hijack handler's return closes it in gw
	_ = callerFar.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, _ := io.ReadAll(io.LimitReader(callerFar, 1<<20))
	sc := wsScanner{}
	if n, err := sc.feed(got); err != nil || !sc.closed || sc.closeCode != wsCloseGoingAway || n != len(got) {
		t.Fatalf("caller stream ends with close %v/%d after %d of %d bytes (%v); want whole frames then 1001", sc.closed, sc.closeCode, n, len(got), err)
	}
}
