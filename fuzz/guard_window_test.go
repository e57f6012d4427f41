package fuzz

import (
	"bytes"
	"testing"

	"gw/edge/guard"
)

// windowJudge blocks windows containing "BAD" and masks "pii" as "[P]".
type windowJudge struct{ out []byte }

func (j *windowJudge) JudgeWindow(text []byte) ([]byte, guard.Decision) {
	if bytes.Contains(text, []byte("BAD")) {
		return text, guard.Blocked
	}
	if bytes.Contains(text, []byte("pii")) {
		j.out = append(j.out[:0], bytes.ReplaceAll(text, []byte("pii"), []byte("[P]"))...)
		return j.out, guard.Masked
	}
	return text, guard.Pass
}

func streamWindow(size, overlap int, full bool, text []byte, cuts []byte) ([]byte, guard.Decision) {
	w := guard.Window{Size: size, Overlap: overlap, Full: full}
	j := &windowJudge{}
	var out []byte
	var d guard.Decision
	pos := 0
	for _, c := range cuts {
		n := int(c)
		if pos+n > len(text) {
			break
		}
		if out, d = w.Push(out, text[pos:pos+n], j); d >= guard.Blocked {
			return out, d
		}
		pos += n
	}
	if out, d = w.Push(out, text[pos:], j); d >= guard.Blocked {
		return out, d
	}
	if out, d = w.End(out, j); d >= guard.Blocked {
		return out, d
	}
	return out, guard.Pass
}

// FuzzGuardWindow: the window scanner gives the same verdict and releases
// the same text for any chunking of the same stream; nothing is lost or
// duplicated when nothing matches, and a blocked stream never released
// the blocked word.
func FuzzGuardWindow(f *testing.F) {
	f.Add([]byte("hello BAD world"), []byte{3, 4, 1}, uint8(16), uint8(4), false)
	f.Add([]byte("some pii and more pii here, and then a long tail of text to cross windows"), []byte{1, 2, 3, 5, 8, 13}, uint8(20), uint8(6), false)
	f.Add([]byte("héllo wörld € pii"), []byte{1, 1, 1, 1, 1, 1, 1}, uint8(17), uint8(3), true)
	f.Fuzz(func(t *testing.T, text, cuts []byte, size, overlap uint8, full bool) {
		sz := 16 + int(size)%200
		ov := int(overlap) % (sz/2 + 1)
		want, wd := streamWindow(sz, ov, full, text, nil)
		got, gd := streamWindow(sz, ov, full, text, cuts)
		if gd != wd || !bytes.Equal(got, want) {
			t.Fatalf("chunking %v changed the outcome: %d %q; want %d %q", cuts, gd, got, wd, want)
		}
		if wd == guard.Pass && !bytes.Contains(text, []byte("pii")) && !bytes.Equal(want, text) {
			t.Fatalf("released %q; want the text unchanged %q", want, text)
		}
		if wd == guard.Blocked && bytes.Contains(want, []byte("BAD")) {
			t.Fatalf("blocked stream released the word: %q", want)
		}
	})
}
