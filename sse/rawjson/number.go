package rawjson

import (
	"math"
	"strconv"
)

// ParseFloat parses raw, which must be exactly one JSON number (RFC 8259
// grammar, no surrounding whitespace), as a float64. It reports false for
// anything else, and for numbers out of float64 range. It does not allocate
// for numbers of up to 32 bytes (longer spellings are copied to the heap once
// for strconv).
func ParseFloat(raw []byte) (float64, bool) {
	if len(raw) == 0 || skipNumber(raw, 0) != len(raw) {
		return 0, false
	}
	// string(raw) does not escape, so the compiler converts it on the stack
	// when it fits in 32 bytes.
	f, err := strconv.ParseFloat(string(raw), 64)
	return f, err == nil
}

// ParseInt parses raw, which must be exactly one JSON number without a
// fraction or an exponent, as an int64. It reports false for anything else,
// including "1.0" and "1e3" (fall back to ParseFloat if those must count), and
// on overflow.
func ParseInt(raw []byte) (int64, bool) {
	if len(raw) == 0 || skipNumber(raw, 0) != len(raw) {
		return 0, false
	}
	neg := raw[0] == '-'
	digits := raw
	if neg {
		digits = raw[1:]
	}
	var u uint64
	for _, c := range digits {
		if !isDigit(c) {
			return 0, false // fraction or exponent
		}
		if u > (math.MaxUint64-9)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// AppendInt appends n in decimal. Event indexes and sequence numbers are
// mostly below 100, which it writes without strconv's general path.
func AppendInt(dst []byte, n int64) []byte {
	switch {
	case n >= 0 && n < 10:
		return append(dst, byte('0'+n))
	case n >= 10 && n < 100:
		return append(dst, byte('0'+n/10), byte('0'+n%10))
	}
	return strconv.AppendInt(dst, n, 10)
}

// AppendFloat appends f to dst as encoding/json formats a float64: the
// shortest representation that round-trips, in exponent form only below 1e-6
// or from 1e21 on. NaN and infinities have no JSON form and are written as
// null, so the output is always valid JSON.
func AppendFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9, as encoding/json does.
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}
