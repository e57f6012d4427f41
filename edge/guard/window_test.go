package guard

import (
	"bytes"
	"math/rand"
	"testing"
)

// testJudge blocks windows containing block and masks mask as "[X]".
type testJudge struct {
	block, mask string
	out         []byte
	windows     int
}

func (j *testJudge) JudgeWindow(text []byte) ([]byte, Decision) {
	j.windows++
	if j.block != "" && bytes.Contains(text, []byte(j.block)) {
		return text, Blocked
	}
	if j.mask != "" && bytes.Contains(text, []byte(j.mask)) {
		j.out = append(j.out[:0], bytes.ReplaceAll(text, []byte(j.mask), []byte("[X]"))...)
		return j.out, Masked
	}
	return text, Pass
}

// RunWindow streams text in the given chunk sizes through a window and
// returns the released text and the final decision (exported to the fuzz
// package through export_test.go's twin in fuzz/).
func runWindow(size, overlap int, full bool, text []byte, cuts []int, block, mask string) ([]byte, Decision) {
	w := Window{Size: size, Overlap: overlap, Full: full}
	j := &testJudge{block: block, mask: mask}
	var out []byte
	pos := 0
	for _, c := range cuts {
		if pos+c > len(text) {
			break
		}
		var d Decision
		if out, d = w.Push(out, text[pos:pos+c], j); d >= Blocked {
			return out, d
		}
		pos += c
	}
	var d Decision
	if out, d = w.Push(out, text[pos:], j); d >= Blocked {
		return out, d
	}
	out, d = w.End(out, j)
	if d >= Blocked {
		return out, d
	}
	return out, Pass
}

// TestWindowSplitMatch: a blocked word split across two pushes (and across
// a window boundary) is caught before any of its bytes are released.
func TestWindowSplitMatch(t *testing.T) {
	text := []byte("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaforbidden and more text after it")
	i := bytes.Index(text, []byte("forbidden"))
	for cut := i + 1; cut < i+9; cut++ {
		out, d := runWindow(64, 16, false, text, []int{cut}, "forbidden", "")
		if d != Blocked {
			t.Fatalf("cut %d: not blocked", cut)
		}
		if bytes.Contains(out, []byte("forb")) {
			t.Fatalf("cut %d: released %q", cut, out)
		}
	}
	// Masking across the boundary: the released text carries the mask.
	out, d := runWindow(64, 16, false, bytes.ReplaceAll(text, []byte("forbidden"), []byte("secret")), []int{i + 3}, "", "secret")
	if d != Pass || !bytes.Contains(out, []byte("[X] and more")) || bytes.Contains(out, []byte("secret")) {
		t.Fatalf("mask: %d %q", d, out)
	}
}

// TestWindowChunkingInvariant: the same verdict and released text for any
// chunking (the fuzz target explores further).
func TestWindowChunkingInvariant(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	texts := [][]byte{
		[]byte("héllo wörld secret ünïcødé secret " + string(bytes.Repeat([]byte("ab€"), 100)) + " secret end"),
		bytes.Repeat([]byte("x"), 1000),
		[]byte("short secret"),
	}
	for _, text := range texts {
		for _, full := range []bool{false, true} {
			want, wd := runWindow(48, 12, full, text, nil, "", "secret")
			for n := 0; n < 200; n++ {
				var cuts []int
				for s := 0; s < len(text); {
					c := 1 + r.Intn(40)
					cuts = append(cuts, c)
					s += c
				}
				got, gd := runWindow(48, 12, full, text, cuts, "", "secret")
				if gd != wd || !bytes.Equal(got, want) {
					t.Fatalf("chunking %v: %d %q; want %d %q", cuts, gd, got, wd, want)
				}
			}
		}
	}
}

// TestWindowReleasesEarly: window mode releases text before the end.
func TestWindowReleasesEarly(t *testing.T) {
	w := Window{Size: 32, Overlap: 8}
	j := &testJudge{}
	out, _ := w.Push(nil, bytes.Repeat([]byte("y"), 100), j)
	if len(out) == 0 || len(out) > 100-8 || w.Held() < 8 {
		t.Fatalf("released %d, held %d", len(out), w.Held())
	}
	out, _ = w.End(out, j)
	if len(out) != 100 {
		t.Fatalf("total %d", len(out))
	}
}
