package gzipdelta

import (
	"bytes"
	"hash/crc32"
)

// AppendLines appends to dst the gzip member of body, lines ('\n'
// terminated) of JSON objects that share their shape, as the NDJSON of
// usage records does: the same members in the same order, most values
// equal to the line before's. Each line is compared with the line before
// it member by member: where they agree is a back reference, a value that
// differs is written as literals up to the next member boundary (`,"`),
// and the comparison resumes there at the same member of the line before,
// found by its key. A reference is only made where the bytes agree, so a
// boundary found inside a string (`,"` between array elements) or a member
// the line before lacks costs size, never correctness.
func (z *Writer) AppendLines(dst, body []byte) []byte {
	z.Start(dst)
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
func (z *Writer) line(body []byte, p, c, end int) {
	cur, ref := body[:end], body[:c]
	i, j := c, p // the next byte of each line to compare
	for i < end {
		if d := i - j; j < c && d <= MaxDist {
			if l := CommonPrefix(cur[i:], ref[j:]); l >= minMatch {
				z.Match(l, d)
				i += l
				j += l
				continue
			}
		}
		// A value that differs: literals to the next member.
		k := end
		if x := bytes.Index(cur[i+1:], memberSep); x >= 0 {
			k = i + 1 + x
		}
		z.Literals(cur[i:k])
		i = k
		if i < end {
			j = findMember(cur, i, ref, j)
		}
	}
}

var (
	memberSep = []byte(`,"`)
	keyEnd    = []byte(`":`)
)

// maxKey bounds the key looked up in the line before: a longer one is
// compared where the line before stands.
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
