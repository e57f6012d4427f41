package guard

import "unicode/utf8"

// Window defaults when no guardrail of the chain sets window_size (bytes
// of text). A match of up to DefaultWindowOverlap+1 bytes split across
// upstream chunks, or across two windows, is always caught; text is
// released once DefaultWindowSize bytes are held (or at a boundary: a
// finish, a tool call, the stream's end).
const (
	DefaultWindowSize    = 1024
	DefaultWindowOverlap = 256
)

// WindowJudge judges one window of text: the text to release in its place
// (text itself, or its masked form; valid until the next call) and the
// decision.
type WindowJudge interface {
	JudgeWindow(text []byte) ([]byte, Decision)
}

// Window releases one channel of streamed text (content, reasoning or one
// tool call's arguments) through a sliding window. Text is held until it
// has been judged: each time Size bytes are held, the first Size bytes
// (cut back to a rune boundary) are judged; the judged text but its last
// Overlap bytes is released, and those are judged again at the head of
// the next window, so a match of up to Overlap+1 bytes is never split
// between two judged windows. Windows fall at the same text positions
// however the stream is chunked, so the verdicts and the released text do
// not depend on the chunking. Full holds everything until End
// (buffer_full). The zero Window must be given Size before use.
type Window struct {
	Size, Overlap int
	Full          bool
	buf           []byte // held text; its head may be judged carry
}

// Held is the number of text bytes held.
func (w *Window) Held() int { return len(w.buf) }

// Reset empties w, keeping capacity.
func (w *Window) Reset() { w.buf = w.buf[:0] }

// Push adds text and appends what may be released to dst. A decision
// other than Pass or Masked stops the stream: dst then holds what was
// released before it.
func (w *Window) Push(dst, text []byte, j WindowJudge) ([]byte, Decision) {
	w.buf = append(w.buf, text...)
	if w.Full {
		return dst, Pass
	}
	dec := Pass
	for len(w.buf) >= w.Size {
		n := cutWindow(w.buf, w.Size)
		out, d := j.JudgeWindow(w.buf[:n])
		if d == Blocked || d == Unavailable {
			return dst, d
		}
		if d == Masked {
			dec = Masked
		}
		r := len(out) - w.Overlap
		if r <= 0 {
			r = len(out)
		}
		for r > 0 && r < len(out) && !utf8.RuneStart(out[r]) {
			r--
		}
		if r == 0 {
			r = len(out)
		}
		dst = append(dst, out[:r]...)
		// The carry (out[r:]) and the unjudged rest become the new buffer.
		w.buf = spliceHead(w.buf, n, out[r:], len(w.buf)-n)
	}
	return dst, dec
}

// End judges what is held and appends it to dst.
func (w *Window) End(dst []byte, j WindowJudge) ([]byte, Decision) {
	if len(w.buf) == 0 {
		return dst, Pass
	}
	out, d := j.JudgeWindow(w.buf)
	if d == Blocked || d == Unavailable {
		return dst, d
	}
	dst = append(dst, out...)
	w.buf = w.buf[:0]
	return dst, d
}

// Drain appends what is held, unjudged, to dst (on_buffer_exceeded: fail_open).
func (w *Window) Drain(dst []byte) []byte {
	dst = append(dst, w.buf...)
	w.buf = w.buf[:0]
	return dst
}

// cutWindow returns the window length for buf: size, cut back to the start
// of a rune that does not fit in buf[:size]. It reads only buf[:size], so
// the cut does not depend on how much text follows.
func cutWindow(buf []byte, size int) int {
	p := size - 1
	for p > 0 && !utf8.RuneStart(buf[p]) && size-p < utf8.UTFMax {
		p--
	}
	if !utf8.FullRune(buf[p:size]) && p > 0 {
		return p
	}
	return size
}

// spliceHead returns buf with its first n bytes replaced by head (head may
// alias buf). rest is len(buf)-n.
func spliceHead(buf []byte, n int, head []byte, rest int) []byte {
	h := len(head)
	switch {
	case h <= n:
		// head sits at or after buf[0]: copy forward is safe (copy is memmove).
		copy(buf, head)
		copy(buf[h:], buf[n:])
		return buf[:h+rest]
	default:
		// head is longer than what it replaces (a mask longer than the
		// match): grow, then move the rest right before writing head.
		total := h + rest
		if cap(buf) < total {
			nb := make([]byte, total, total+total/2)
			copy(nb[h:], buf[n:])
			copy(nb, head)
			return nb
		}
		buf = buf[:total]
		copy(buf[h:], buf[n:n+rest])
		copy(buf, head)
		return buf
	}
}
