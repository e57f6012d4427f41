package edge

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync"

	"gw/adapters"
	"gw/sse/rawjson"
)

// The /v1/realtime relay works on RFC 6455 frames, not on messages: a frame
// read from one side is written to the other byte for byte. This is valid
// WebSocket on both legs because gw is a server to the caller and a client
// to the upstream: caller frames arrive masked and must leave masked (the
// caller's mask key goes along), upstream frames arrive unmasked and must
// leave unmasked, and no extension (permessage-deflate) is negotiated on
// either leg. So nothing is unmasked, re-masked or re-encoded on the way;
// the relay only parses frame headers, to keep frame boundaries (gw's own
// close frames go between frames), see close frames, and read the usage of
// `response.done` events on the upstream leg.

// WebSocket opcodes (RFC 6455 §5.2).
const (
	wsOpContinuation = 0x0
	wsOpText         = 0x1
	wsOpBinary       = 0x2
	wsOpClose        = 0x8
	wsOpPing         = 0x9
	wsOpPong         = 0xA
)

// Close codes gw sends itself (RFC 6455 §7.4.1; 1011 for upstream failures: the IANA 1014 "Bad Gateway" is refused by common clients, gorilla among them).
const (
	wsCloseNormal    = 1000
	wsCloseGoingAway = 1001
	wsCloseProtocol  = 1002
	wsCloseNoStatus  = 1005 // received close without a code (never sent)
	wsCloseInternal  = 1011
)

// wsMaxHeader is the longest frame header: 2 + 8 (length) + 4 (mask).
const wsMaxHeader = 14

// Frame header errors: a header no peer may send on a leg without extensions.
var (
	errWSReserved      = errors.New("edge: websocket frame with reserved bits set (no extension was negotiated)")
	errWSOpcode        = errors.New("edge: websocket frame with a reserved opcode")
	errWSControl       = errors.New("edge: websocket control frame fragmented or longer than 125 bytes")
	errWSLength        = errors.New("edge: websocket frame length out of range")
	errWSMask          = errors.New("edge: websocket frame masking does not match the sender's role")
	errWSContinuation  = errors.New("edge: websocket continuation frame outside a fragmented message")
	errWSInterleaved   = errors.New("edge: websocket data frame inside a fragmented message")
	errWSAfterClose    = errors.New("edge: websocket frame after a close frame")
	errWSClosePayload  = errors.New("edge: websocket close frame with a 1-byte payload")
	errWSHeaderTooLong = errors.New("BUG: websocket header longer than the relay buffer")
)

// wsHeader is one parsed frame header.
type wsHeader struct {
	fin    bool
	opcode byte
	masked bool
	mask   [4]byte
	length int64 // payload bytes
	size   int   // header bytes
}

// parseWSHeader parses the frame header at the start of b. ok is false when
// b holds less than the whole header; err reports a header that breaks
// RFC 6455 on a leg without extensions.
func parseWSHeader(b []byte) (h wsHeader, ok bool, err error) {
	if len(b) < 2 {
		return h, false, nil
	}
	b0, b1 := b[0], b[1]
	if b0&0x70 != 0 {
		return h, false, errWSReserved
	}
	h.fin = b0&0x80 != 0
	h.opcode = b0 & 0x0f
	switch h.opcode {
	case wsOpContinuation, wsOpText, wsOpBinary, wsOpClose, wsOpPing, wsOpPong:
	default:
		return h, false, errWSOpcode
	}
	h.masked = b1&0x80 != 0
	n := int64(b1 & 0x7f)
	h.size = 2
	switch n {
	case 126:
		if len(b) < 4 {
			return h, false, nil
		}
		n = int64(binary.BigEndian.Uint16(b[2:4]))
		h.size = 4
	case 127:
		if len(b) < 10 {
			return h, false, nil
		}
		u := binary.BigEndian.Uint64(b[2:10])
		if u>>63 != 0 {
			return h, false, errWSLength
		}
		n = int64(u)
		h.size = 10
	}
	if h.opcode >= wsOpClose && (n > 125 || !h.fin) {
		return h, false, errWSControl
	}
	h.length = n
	if h.masked {
		if len(b) < h.size+4 {
			return h, false, nil
		}
		copy(h.mask[:], b[h.size:h.size+4])
		h.size += 4
	}
	return h, true, nil
}

// usagePrefix is how much of a text message is looked at to decide whether
// it is a `response.done` event ("type" comes first on OpenAI's wire, an
// event_id may precede it elsewhere).
const usagePrefix = 160

// maxUsageEvent bounds the `response.done` event held to read its usage (it
// carries the response's output items, text transcripts included, never
// audio). A larger one is relayed but its usage is not counted
// (wsScanner.unread).
const maxUsageEvent = 4 << 20

var (
	strResponseDone = []byte(`"response.done"`)
)

// wsScanner follows the frames of one leg of a session. It is fed the bytes
// read from the leg in order, split anywhere, and says how many of them are
// whole enough to relay now (a frame header is relayed only once complete;
// a control frame only once its payload is in, so its close code is read).
// Not safe for concurrent use; one per leg.
type wsScanner struct {
	masked bool // frames must be masked (caller leg) or not (upstream leg)
	usage  bool // read response.done usage from text messages (upstream leg)

	left    int64 // payload bytes of the current data frame still to come
	inFrame bool  // inside a data frame's payload
	inMsg   bool  // inside a fragmented data message (a non-FIN frame was seen)
	fin     bool  // the current data frame ends its message
	text    bool  // the current message is text

	pre     [usagePrefix]byte // the message's first bytes (upstream leg: unmasked)
	npre    int
	capture *[]byte // a response.done event being held, nil when none
	over    bool    // the current message outgrew maxUsageEvent

	closed    bool   // a close frame was seen; nothing may follow
	closeCode uint16 // its code (wsCloseNoStatus when it had none)

	frames   int64 // data frames seen
	messages int64 // data messages seen
	sum      adapters.Usage
	events   int64 // response.done events whose usage was counted
	unread   int64 // response.done events whose usage could not be read
}

// feed walks the frames in p (the unrelayed bytes of the leg) and returns
// how many leading bytes may be relayed; the rest is an incomplete header
// or control frame to feed again with more bytes after it.
func (s *wsScanner) feed(p []byte) (int, error) {
	i := 0
	for i < len(p) {
		if !s.inFrame {
			if s.closed {
				return i, errWSAfterClose
			}
			h, ok, err := parseWSHeader(p[i:])
			if err != nil {
				return i, err
			}
			if !ok {
				return i, nil
			}
			if h.masked != s.masked {
				return i, errWSMask
			}
			if h.opcode >= wsOpClose {
				end := int64(i) + int64(h.size) + h.length
				if end > int64(len(p)) {
					return i, nil // wait for the whole control frame
				}
				if h.opcode == wsOpClose {
					if err := s.readClose(p[i+h.size:end], &h); err != nil {
						return i, err
					}
					return int(end), nil // nothing may follow; the leg stops here
				}
				i = int(end)
				continue
			}
			if h.opcode == wsOpContinuation {
				if !s.inMsg {
					return i, errWSContinuation
				}
			} else {
				if s.inMsg {
					return i, errWSInterleaved
				}
				s.startMessage(h.opcode == wsOpText)
			}
			s.inMsg = !h.fin
			s.fin = h.fin
			s.left = h.length
			s.inFrame = true
			i += h.size
		}
		k := int64(len(p) - i)
		if k > s.left {
			k = s.left
		}
		if s.usage && s.text && k > 0 {
			s.scan(p[i : i+int(k)])
		}
		i += int(k)
		s.left -= k
		if s.left == 0 {
			s.inFrame = false
			s.frames++
			if s.fin {
				s.endMessage()
			}
		}
	}
	return i, nil
}

// atBoundary reports that everything relayed so far ends on a frame
// boundary, where gw may put a close frame of its own.
func (s *wsScanner) atBoundary() bool { return !s.inFrame }

func (s *wsScanner) readClose(payload []byte, h *wsHeader) error {
	s.closed = true
	switch {
	case len(payload) == 0:
		s.closeCode = wsCloseNoStatus
	case len(payload) == 1:
		return errWSClosePayload
	default:
		b0, b1 := payload[0], payload[1]
		if h.masked {
			b0 ^= h.mask[0]
			b1 ^= h.mask[1]
		}
		s.closeCode = uint16(b0)<<8 | uint16(b1)
	}
	return nil
}

func (s *wsScanner) startMessage(text bool) {
	s.messages++
	s.text = text
	s.npre = 0
	s.over = false
	if s.capture != nil {
		releaseCapture(s.capture)
		s.capture = nil
	}
}

// scan takes the next payload bytes of a text message on the upstream leg
// (unmasked): the first usagePrefix bytes are kept to recognise a
// response.done event, which is then held whole to read its usage.
func (s *wsScanner) scan(b []byte) {
	if s.npre < usagePrefix {
		n := copy(s.pre[s.npre:], b)
		s.npre += n
		b = b[n:]
		if s.npre < usagePrefix {
			return // decided at the end of the message
		}
		if !bytes.Contains(s.pre[:], strResponseDone) {
			return
		}
		s.capture = acquireCapture()
		*s.capture = append(*s.capture, s.pre[:]...)
	}
	if s.capture == nil || s.over {
		return
	}
	if len(*s.capture)+len(b) > maxUsageEvent {
		s.over = true
		return
	}
	*s.capture = append(*s.capture, b...)
}

func (s *wsScanner) endMessage() {
	if !s.usage || !s.text {
		return
	}
	var ev []byte
	switch {
	case s.capture != nil && !s.over:
		ev = *s.capture
	case s.capture != nil:
		s.unread++
	case s.npre < usagePrefix && bytes.Contains(s.pre[:s.npre], strResponseDone):
		ev = s.pre[:s.npre]
	}
	if ev != nil {
		s.readUsage(ev)
	}
	if s.capture != nil {
		releaseCapture(s.capture)
		s.capture = nil
	}
}

// readUsage adds the usage of a response.done event to the session's sum.
// A response.done without a readable usage object counts as unread.
func (s *wsScanner) readUsage(ev []byte) {
	t, kind, ok := rawjson.Get(ev, "type")
	if !ok || kind != rawjson.String || string(t) != `"response.done"` {
		return
	}
	u, kind, ok := rawjson.GetPath(ev, "response", "usage")
	if !ok || kind != rawjson.Object {
		s.unread++
		return
	}
	got, ok := realtimeUsage(u)
	if !ok {
		s.unread++
		return
	}
	s.events++
	s.sum.Prompt += got.Prompt
	s.sum.Completion += got.Completion
	s.sum.Total += got.Total
	s.sum.Cached += got.Cached
}

// realtimeUsage reads a Realtime usage object: input_tokens, output_tokens,
// total_tokens and input_token_details.cached_tokens (text and audio tokens
// together, as the upstream bills them).
func realtimeUsage(u []byte) (adapters.Usage, bool) {
	var out adapters.Usage
	n := 0
	for _, f := range [...]struct {
		key string
		dst *int64
	}{{"input_tokens", &out.Prompt}, {"output_tokens", &out.Completion}, {"total_tokens", &out.Total}} {
		v, kind, ok := rawjson.Get(u, f.key)
		if !ok || kind != rawjson.Number {
			continue
		}
		x, ok := rawjson.ParseInt(v)
		if !ok || x < 0 {
			return adapters.Usage{}, false
		}
		*f.dst = x
		n++
	}
	if v, kind, ok := rawjson.GetPath(u, "input_token_details", "cached_tokens"); ok && kind == rawjson.Number {
		if x, ok := rawjson.ParseInt(v); ok && x >= 0 {
			out.Cached = x
		}
	}
	return out, n > 0
}

// appendCloseFrame appends a close frame with code and reason (truncated to
// fit a control frame), masked with key when mask is true (gw's frames to
// the upstream).
func appendCloseFrame(dst []byte, code uint16, reason string, mask bool, key [4]byte) []byte {
	if len(reason) > 123 {
		reason = reason[:123]
	}
	n := 2 + len(reason)
	dst = append(dst, 0x80|wsOpClose)
	if mask {
		dst = append(dst, 0x80|byte(n))
		dst = append(dst, key[:]...)
	} else {
		dst = append(dst, byte(n))
	}
	start := len(dst)
	dst = append(dst, byte(code>>8), byte(code))
	dst = append(dst, reason...)
	if mask {
		for i := start; i < len(dst); i++ {
			dst[i] ^= key[(i-start)&3]
		}
	}
	return dst
}

// capturePool holds the buffers response.done events are read from.
var capturePool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

func acquireCapture() *[]byte { return capturePool.Get().(*[]byte) }

// releaseCapture pools b unless it grew past 256 KiB: one huge event must
// not pin its memory for the life of the process.
func releaseCapture(b *[]byte) {
	if cap(*b) > 256<<10 {
		return
	}
	*b = (*b)[:0]
	capturePool.Put(b)
}

// RealtimeScanResult is what ScanRealtimeFrames saw.
type RealtimeScanResult struct {
	Relayed   int   // bytes allowed to relay before the first error
	Frames    int64 // data frames
	Messages  int64
	Usage     adapters.Usage // summed response.done usage (upstream leg)
	Closed    bool
	CloseCode uint16
	Err       error
}

// ScanRealtimeFrames runs one leg's frame scanner over p fed in pieces of
// step bytes (fuzzing and tests outside the package): fromCaller selects
// the caller leg (masked frames, no usage) or the upstream leg.
func ScanRealtimeFrames(p []byte, step int, fromCaller bool) RealtimeScanResult {
	s := wsScanner{masked: fromCaller, usage: !fromCaller}
	if step <= 0 {
		step = 1
	}
	var r RealtimeScanResult
	var pending []byte
	for len(p) > 0 {
		n := min(step, len(p))
		pending = append(pending, p[:n]...)
		p = p[n:]
		k, err := s.feed(pending)
		r.Relayed += k
		pending = append(pending[:0], pending[k:]...)
		if err != nil {
			r.Err = err
			break
		}
		if s.closed {
			break
		}
	}
	r.Frames, r.Messages, r.Usage, r.Closed, r.CloseCode = s.frames, s.messages, s.sum, s.closed, s.closeCode
	if s.capture != nil {
		releaseCapture(s.capture)
	}
	return r
}
