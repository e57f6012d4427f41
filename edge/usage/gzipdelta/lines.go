package gzipdelta

import (
	"bytes"
	"hash/crc32"
)

// AppendLines appends to dst the gzip member of body, lines ('\n'
// terminated) of JSON objects that share their shape, as the NDJSON of
// usage records does: the same members in the same order, most values
// equal to the line before's. Each line is compared with the line before
// it member by member: where they agree is a back reference; a value that
// differs is written as literals up to the next member boundary (`,"`),
// and both lines resume at their next boundary; where the keys there
// differ (a member one line lacks), the line before is searched for this
// line's key. A reference is only made where the bytes agree, so a
// boundary found inside a string (`,"` between array elements) or a
// member the line before lacks costs size, never correctness.
func (z *Writer) AppendLines(dst, body []byte) []byte {
	z.Start(dst, len(body))
	prev := -1 // where the line before starts
	for pos := 0; pos < len(body); {
		end := len(body)
		if i := bytes.IndexByte(body[pos:], '\n'); i >= 0 {
			end = pos + i + 1
		}
		if prev < 0 {
			z.Literals(body[pos:end])
		} else {
			z.line(body, prev, pos, end)
		}
		prev, pos = pos, end
	}
	return z.Finish(crc32.ChecksumIEEE(body), len(body))
}

// line writes body[c:end] against the line before it, body[p:c].
func (z *Writer) line(body []byte, p, c, end int) { z.lineRange(body, p, c, c, end) }

// lineRange writes body[c:end] against body[p:pe], a piece of a line
// against the same piece of the line before (line: the whole of both).
func (z *Writer) lineRange(body []byte, p, pe, c, end int) {
	cur, ref := body[:end], body[:pe]
	i, j := c, p // the next byte of each line to compare
	for i < end {
		if j < pe && i-j <= MaxDist {
			if l := CommonPrefix(cur[i:], ref[j:]); l >= minMatch {
				z.Match(l, i-j)
				i += l
				j += l
				continue
			}
			if isSep(cur, i) && isSep(ref, j) {
				// Two members with different keys: the line before may
				// have this one further on; if not, it is new here and
				// the line before stays where it is.
				if k := findMember(cur, i, ref, j); k > j {
					j = k
					continue
				}
				k := nextSep(cur, i+1)
				z.Literals(cur[i:k])
				i = k
				continue
			}
		}
		// A value that differs: literals to the next member, where both
		// lines resume.
		k := nextSep(cur, i+1)
		z.Literals(cur[i:k])
		i = k
		if j < pe {
			j = nextSep(ref, j+1)
		}
	}
}

// isSep reports a member separator (`,"`) at b[i].
func isSep(b []byte, i int) bool { return i+1 < len(b) && b[i] == ',' && b[i+1] == '"' }

// nextSep returns the index of the first member separator (`,"`) in b at
// or after i, or len(b).
func nextSep(b []byte, i int) int {
	for i < len(b) {
		k := bytes.IndexByte(b[i:], ',')
		if k < 0 {
			break
		}
		i += k
		if i+1 < len(b) && b[i+1] == '"' {
			return i
		}
		i++
	}
	return len(b)
}

var keyEnd = []byte(`":`)

// maxKey bounds the key looked up in the line before.
const maxKey = 64

// findMember returns where in ref, at j or after, the member whose
// separator and key (`,"key":`) start cur[i:] is; j when there is none.
func findMember(cur []byte, i int, ref []byte, j int) int {
	n := bytes.Index(cur[i+2:min(len(cur), i+2+maxKey)], keyEnd)
	if n < 0 || j >= len(ref) {
		return j
	}
	if x := bytes.Index(ref[j:], cur[i:i+2+n+2]); x >= 0 {
		return j + x
	}
	return j
}

// Lines is AppendLines a line at a time: each line is compressed as it
// is written, while it and the line before are in the cache, and the
// lines before those two are let go (RollAt): a batch's half megabyte of
// lines, compressed at its end, had been written over tens of
// milliseconds of a loaded gateway's other work and was no longer cached,
// and streaming it through the caches pushed the gateway's own data out.
// The member is the one AppendLines writes.
type Lines struct {
	z     Writer
	crc   uint32
	total int   // bytes of the lines added since the member began
	prev  int   // where in body the last line added starts (-1: none)
	end   int   // where it ends
	parts Parts // its parts (N 0: added whole)
}

// MaxParts bounds the parts of a line (Parts).
const MaxParts = 8

// Parts divides a line into pieces its encoder knows to be the line
// before's or not: End[k] is where part k ends, from the line's start
// (the last part ends the line); bit k of Same says part k is byte for
// byte the line before's part k (the encoder copied it, having found the
// values it encodes unchanged); Back[k] > 0 says part k is byte for byte
// the bytes Back[k] before it in the same line (a value the line holds
// twice). The claims are trusted, not checked against the bytes (that is
// what they save): a false one corrupts the member. One that cannot hold
// (a part of another length than the line before's, a place before the
// line) is ignored and the part compared.
type Parts struct {
	End  [MaxParts]int32
	Back [MaxParts]int32
	N    int
	Same uint32
}

// RollAt is the size past which a compressing encoder drops the encoded
// bytes it no longer refers to, keeping its buffer in the cache.
const RollAt = 16 << 10

// Add compresses body[c:], the one line appended to body since the last
// Add (c 0: the first of a new member), and returns body, from which
// the lines before that one may have been dropped: append the next line
// to what Add returned.
func (l *Lines) Add(body []byte, c int) []byte {
	l.open(body, c)
	if l.prev < 0 {
		l.z.Literals(body[c:])
	} else {
		l.z.line(body, l.prev, c, len(body))
	}
	l.parts.N = 0
	return l.close(body, c)
}

// AddParts is Add for a line in parts (p), the line before having been
// added in as many: a part that is the line before's is one back
// reference, made without comparing a byte; each other part is compared
// with its counterpart as Add compares lines. The member is not
// AppendLines' to the byte (a copied part's reference is not cut where
// AppendLines' comparison would resume), but it inflates to the same
// lines.
func (l *Lines) AddParts(body []byte, c int, p *Parts) []byte {
	l.open(body, c)
	switch {
	case l.prev < 0:
		l.z.Literals(body[c:])
	case l.parts.N != p.N || p.N == 0:
		l.z.line(body, l.prev, c, len(body))
	default:
		a, pa := c, l.prev
		for k := 0; k < p.N; k++ {
			b, pb := c+int(p.End[k]), l.prev+int(l.parts.End[k])
			switch {
			case p.Same&(1<<k) != 0 && b-a == pb-pa && b-a >= minMatch && a-pa <= MaxDist:
				l.z.Match(b-a, a-pa)
			case p.Back[k] > 0 && int(p.Back[k]) <= MaxDist && b-a >= minMatch && a-int(p.Back[k]) >= c:
				l.z.Match(b-a, int(p.Back[k]))
			default:
				l.z.lineRange(body, pa, pb, a, b)
			}
			a, pa = b, pb
		}
	}
	l.parts = *p
	return l.close(body, c)
}

// open starts a member (c 0) or makes room for the line at body[c:].
func (l *Lines) open(body []byte, c int) {
	if c == 0 {
		l.z.Open(len(body))
		l.crc, l.prev, l.total = 0, -1, 0
	} else {
		l.z.Reserve(len(body) - c)
	}
}

// close checksums the line just compressed and rolls body (RollAt).
func (l *Lines) close(body []byte, c int) []byte {
	l.crc = crc32.Update(l.crc, crc32.IEEETable, body[c:])
	l.total += len(body) - c
	if len(body) >= RollAt {
		body = body[:copy(body, body[c:])]
		c = 0
	}
	l.prev, l.end = c, len(body)
	return body
}

// Finish appends to dst the gzip member of the lines added, body being
// what the last Add returned (for a body Add did not see: AppendLines').
func (l *Lines) Finish(dst, body []byte) []byte {
	if len(body) == 0 || l.end != len(body) || l.prev < 0 {
		return l.z.AppendLines(dst, body)
	}
	l.end = 0
	dst = append(dst, gzipHeader[:]...)
	dst = append(dst, l.z.End()...)
	return AppendTrailer(dst, l.crc, l.total)
}
