package pii

import (
	"bytes"
	"encoding/binary"
)

// The built-in detectors. Each finds, for every start position its
// boundary rule allows, the longest match starting there, and reports it as
// a span; overlapping spans are merged when masking. Every detector is a
// hand-written scanner over bytes (no regexp), and the expensive ones are
// reached only through a fast skip: bytes.IndexByte for '@' and ':',
// bytes.Index for "eyJ" and "-----BEGIN ", bytes.IndexByte for the '-' and
// '_' of most API-key prefixes, and one shared loop that stops only at
// digits, '+' and 'A' (the AWS and Google key prefixes).
//
// What each matches exactly is documented in docs/GUARDRAILS_KINDS.md.

// Detector ids, in resources.PIIDetectorNames order.
const (
	detEmail = iota
	detChinaMobile
	detChinaIDCard
	detBankCard
	detUSSSN
	detIPAddress
	detAPIKey
	detJWT
	detPrivateKey
	numDetectors
)

// sink receives the spans of one text: slot is the detector's position in
// the guardrail's configuration. With anyOnly set a detector may stop at its
// first span.
type sink struct {
	spans []span
	slot  [numDetectors]int32 // detector id → entry index, -1 = disabled
	hit   []bool              // entry index → hit in this text
}

type span struct {
	start, end int
	entry      int32
}

func (s *sink) add(det, start, end int) {
	e := s.slot[det]
	s.hit[e] = true
	s.spans = append(s.spans, span{start, end, e})
}

func (s *sink) on(det int) bool { return s.slot[det] >= 0 }

// scanBuiltins runs the enabled detectors over data.
func scanBuiltins(data []byte, s *sink) {
	if s.on(detEmail) {
		scanEmail(data, s)
	}
	if s.on(detIPAddress) {
		scanIPv6(data, s)
	}
	if s.on(detJWT) {
		scanJWT(data, s)
	}
	// A PEM line and most key prefixes need a '-': one look for it gates
	// both (most texts have none).
	dash := -1
	if s.on(detPrivateKey) || s.on(detAPIKey) {
		dash = bytes.IndexByte(data, '-')
	}
	if dash >= 0 && s.on(detPrivateKey) {
		scanPrivateKey(data, s)
	}
	if s.on(detChinaMobile) || s.on(detChinaIDCard) || s.on(detBankCard) || s.on(detUSSSN) || s.on(detIPAddress) || s.on(detAPIKey) {
		scanMain(data, s)
	}
	if s.on(detAPIKey) {
		scanKeyPunct(data, dash, s)
	}
}

// --- email ---

const (
	maxLocal  = 64
	maxDomain = 255
)

// scanEmail: local part [A-Za-z0-9._%+-]{1,64} starting where the previous
// byte is not one of those, '@', then the longest domain of at least two
// dot-separated labels (each 1–63 of [A-Za-z0-9-], not starting or ending
// with '-'; at most 255 bytes) whose last label is 2–63 letters and which
// is not followed by [A-Za-z0-9-].
func scanEmail(data []byte, s *sink) {
	for off := 0; ; {
		k := bytes.IndexByte(data[off:], '@')
		if k < 0 {
			return
		}
		at := off + k
		off = at + 1
		start := at
		for start > 0 && isLocalByte(data[start-1]) {
			start--
		}
		if start == at || at-start > maxLocal {
			continue
		}
		if end := emailDomainEnd(data, at+1); end > 0 {
			s.add(detEmail, start, end)
		}
	}
}

func isDomainByte(c byte) bool { return isAlnum(c) || c == '-' }

// emailDomainEnd returns the end of the longest valid domain at data[d:],
// or -1, in one pass over the labels (a bad label ends every longer
// candidate too).
func emailDomainEnd(data []byte, d int) int {
	run := d
	for run < len(data) && run-d < maxDomain && (isDomainByte(data[run]) || data[run] == '.') {
		run++
	}
	best, labels, start := -1, 0, d
	for p := d; p <= run; p++ {
		if p < run && data[p] != '.' {
			continue
		}
		l := data[start:p]
		if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			break
		}
		labels++
		if labels >= 2 && len(l) >= 2 && allAlpha(l) && (p == len(data) || !isDomainByte(data[p])) {
			best = p
		}
		start = p + 1
	}
	return best
}

func allAlpha(b []byte) bool {
	for _, c := range b {
		if !isAlpha(c) {
			return false
		}
	}
	return true
}

// --- IPv6 ---

const maxIPv6Len = 45 // ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255

func isIPTokenByte(c byte) bool { return isAlnum(c) || c == ':' || c == '.' }
func isIPv6Byte(c byte) bool    { return isHex(c) || c == ':' || c == '.' }

// scanIPv6: at the start of a run of [A-Za-z0-9:.] (the previous byte is
// none of those), the longest prefix of at most 45 bytes of [0-9A-Fa-f:.]
// that is an IPv6 address with at least one hex digit, followed by neither
// [A-Za-z0-9] nor ':'.
func scanIPv6(data []byte, s *sink) {
	for off := 0; ; {
		k := bytes.IndexByte(data[off:], ':')
		if k < 0 {
			return
		}
		c := off + k
		start := c
		for start > 0 && isIPTokenByte(data[start-1]) {
			start--
		}
		end := c
		for end < len(data) && isIPTokenByte(data[end]) {
			end++
		}
		off = end
		run := start
		colons := 0
		for run < len(data) && run-start < maxIPv6Len && isIPv6Byte(data[run]) {
			if data[run] == ':' {
				colons++
			}
			run++
		}
		if colons < 2 {
			continue
		}
		for j := run; j >= start+2; j-- {
			if j < len(data) && (isAlnum(data[j]) || data[j] == ':') {
				continue
			}
			if validIPv6(data[start:j]) && hasHexDigit(data[start:j]) {
				s.add(detIPAddress, start, j)
				break
			}
		}
	}
}

func hasHexDigit(b []byte) bool {
	for _, c := range b {
		if isHex(c) {
			return true
		}
	}
	return false
}

// --- JWT ---

// scanJWT: "eyJ" not preceded by [A-Za-z0-9_-], then three '.'-separated
// maximal runs of [A-Za-z0-9_-]: the first at least 10 bytes (eyJ
// included), the others at least 1.
func scanJWT(data []byte, s *sink) {
	// 'J' is rare in text where 'e' is everywhere: look for it, then "ey".
	for off := 2; off < len(data); {
		k := bytes.IndexByte(data[off:], 'J')
		if k < 0 {
			return
		}
		i := off + k - 2
		off += k + 1
		if data[i] != 'e' || data[i+1] != 'y' || i > 0 && isTokenByte(data[i-1]) {
			continue
		}
		p, ok := i, true
		for seg := 0; seg < 3 && ok; seg++ {
			if seg > 0 {
				if p >= len(data) || data[p] != '.' {
					ok = false
					break
				}
				p++
			}
			q := p
			for q < len(data) && isTokenByte(data[q]) {
				q++
			}
			min := 1
			if seg == 0 {
				min = 10
			}
			ok = q-p >= min
			p = q
		}
		if ok {
			s.add(detJWT, i, p)
		}
	}
}

// --- private keys ---

var (
	pemBegin = []byte("-----BEGIN ")
	pemEnd   = []byte("-----END ")
)

// pemLabelEnd: at data[i:], a run of [A-Z0-9 ] ending in "PRIVATE KEY"
// followed by "-----"; returns the end of the dashes or -1.
func pemLabelEnd(data []byte, i int) int {
	j := i
	for j < len(data) && (data[j] >= 'A' && data[j] <= 'Z' || isDigit(data[j]) || data[j] == ' ') {
		j++
	}
	if !bytes.HasSuffix(data[i:j], []byte("PRIVATE KEY")) || !bytes.HasPrefix(data[j:], []byte("-----")) {
		return -1
	}
	return j + 5
}

// scanPrivateKey: a "-----BEGIN <label>PRIVATE KEY-----" line through the
// first "-----END <label>PRIVATE KEY-----" after it, or through the end of
// the text when there is none (a key cut short is still key material).
func scanPrivateKey(data []byte, s *sink) {
	// The END found for one BEGIN serves every later BEGIN before it, so
	// a text of many BEGIN lines is still scanned once.
	endFrom, endAt, endStart := -1, -1, -1
	for off := 0; ; {
		k := bytes.Index(data[off:], pemBegin)
		if k < 0 {
			return
		}
		i := off + k
		off = i + 1
		b := pemLabelEnd(data, i+len(pemBegin))
		if b < 0 {
			continue
		}
		if endFrom < 0 || b < endFrom || endStart >= 0 && b > endStart {
			endFrom, endAt, endStart = b, len(data), -1
			for o := b; ; {
				m := bytes.Index(data[o:], pemEnd)
				if m < 0 {
					break
				}
				if e := pemLabelEnd(data, o+m+len(pemEnd)); e >= 0 {
					endAt, endStart = e, o+m
					break
				}
				o += m + 1
			}
		}
		s.add(detPrivateKey, i, endAt)
	}
}

// --- the shared loop: numbers and API keys ---

// mainStart marks the bytes at which a main-loop detector can start.
var mainStart = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	// Keys starting with s, g or x have a '-' or '_' in their prefix and
	// are found from it (scanKeyPunct): those letters start many words.
	for _, c := range "+A" {
		t[c] = true
	}
	return t
}()

// scanKeyPunct finds the API keys whose prefix holds a '-' or '_' (sk-,
// xox?-, gh?_, github_pat_) by looking for those bytes, rare in prose, and
// checking the letters before them; dash is the first '-' in data, or -1.
func scanKeyPunct(data []byte, dash int, s *sink) {
	for p := dash; p >= 0; {
		switch {
		case p >= 2 && data[p-2] == 's' && data[p-1] == 'k':
			keyAt(data, p-2, s)
		case p >= 4 && data[p-4] == 'x' && data[p-3] == 'o' && data[p-2] == 'x':
			keyAt(data, p-4, s)
		}
		k := bytes.IndexByte(data[p+1:], '-')
		if k < 0 {
			break
		}
		p += 1 + k
	}
	for off := 0; ; {
		k := bytes.IndexByte(data[off:], '_')
		if k < 0 {
			return
		}
		p := off + k
		off = p + 1
		switch {
		case p >= 3 && data[p-3] == 'g' && data[p-2] == 'h':
			keyAt(data, p-3, s)
		case p >= 6 && hasPrefixAt(data, p-6, "github_pat_"):
			keyAt(data, p-6, s)
		}
	}
}

// keyAt adds the API key starting at i, if any: a key starts where the
// previous byte is not [A-Za-z0-9_-].
func keyAt(data []byte, i int, s *sink) {
	if i > 0 && isTokenByte(data[i-1]) {
		return
	}
	if end := apiKeyAt(data, i); end > 0 {
		s.add(detAPIKey, i, end)
	}
}

func scanMain(data []byte, s *sink) {
	numbers := s.on(detChinaMobile) || s.on(detChinaIDCard) || s.on(detBankCard) || s.on(detUSSSN) || s.on(detIPAddress)
	keys := s.on(detAPIKey)
	for i := 0; i < len(data); i++ {
		// Fast path - most bytes start nothing: skip eight at a time while
		// none is a digit, '+' or 'A'.
		for i+8 <= len(data) && !mainStart8(binary.LittleEndian.Uint64(data[i:])) {
			i += 8
		}
		if i >= len(data) {
			break
		}
		c := data[i]
		if !mainStart[c] {
			continue
		}
		if i > 0 && isAlnum(data[i-1]) {
			continue
		}
		if isDigit(c) || c == '+' {
			if numbers {
				scanNumberAt(data, i, s)
			}
			continue
		}
		if keys {
			keyAt(data, i, s)
		}
	}
}

// mainStart8 reports whether one of the eight bytes in x is a digit, '+'
// or 'A' (the bytes mainStart marks), with the has-zero-byte and
// has-byte-between tricks of "Bit Twiddling Hacks": exact for presence,
// and bytes ≥ 0x80 never count.
func mainStart8(x uint64) bool {
	const (
		ones = 0x0101010101010101
		low7 = 0x7f7f7f7f7f7f7f7f
		high = 0x8080808080808080
	)
	x7 := x & low7
	// A byte strictly between '/' and ':' (a digit).
	digit := (ones*(127+':') - x7) & ^x & (x7 + ones*(127-'/')) & high
	plus := x ^ (ones * '+')
	a := x ^ (ones * 'A')
	return digit|((plus-ones)&^plus&high)|((a-ones)&^a&high) != 0
}

// endsWord: the byte at data[j], if any, is not an ASCII letter or digit.
func endsWord(data []byte, j int) bool { return j >= len(data) || !isAlnum(data[j]) }

// scanNumberAt tries the number detectors at i (a digit or '+' whose
// previous byte is not a letter or digit).
func scanNumberAt(data []byte, i int, s *sink) {
	if s.on(detChinaMobile) {
		if end := chinaMobileAt(data, i); end > 0 {
			s.add(detChinaMobile, i, end)
		}
	}
	if data[i] == '+' {
		return
	}
	r := digitRun(data, i)
	if s.on(detChinaIDCard) {
		end := -1
		switch {
		case r == 18:
			end = i + 18
		case r == 17 && i+17 < len(data) && (data[i+17] == 'X' || data[i+17] == 'x'):
			end = i + 18
		}
		if end > 0 && endsWord(data, end) && validIDCard(data[i:end]) {
			s.add(detChinaIDCard, i, end)
		}
	}
	if s.on(detBankCard) {
		if end := bankCardAt(data, i, r); end > 0 {
			s.add(detBankCard, i, end)
		}
	}
	if s.on(detUSSSN) && r == 3 {
		// AAA-GG-SSSS with exact digit runs.
		if i+11 <= len(data) && data[i+3] == '-' && digitRun(data, i+4) == 2 && data[i+6] == '-' &&
			digitRun(data, i+7) == 4 && endsWord(data, i+11) && validSSN(data[i:i+11]) {
			s.add(detUSSSN, i, i+11)
		}
	}
	if s.on(detIPAddress) && r <= 3 && (i == 0 || data[i-1] != '.') {
		if end := ipv4At(data, i); end > 0 && endsWord(data, end) &&
			!(end+1 < len(data) && data[end] == '.' && isDigit(data[end+1])) {
			s.add(detIPAddress, i, end)
		}
	}
}

// chinaMobileAt: an optional "+86" or "0086" prefix (then optionally one
// space or dash), then 1[3-9] and nine more digits, contiguous or grouped
// 3-4-4 by one repeated space or dash; not followed by a letter or digit.
func chinaMobileAt(data []byte, i int) int {
	p := i
	switch {
	case hasPrefixAt(data, i, "+86"):
		p += 3
	case hasPrefixAt(data, i, "0086"):
		p += 4
	case data[i] == '+':
		return -1
	}
	if p > i && p < len(data) && (data[p] == ' ' || data[p] == '-') {
		p++
	}
	if p+3 > len(data) || data[p] != '1' || data[p+1] < '3' || data[p+1] > '9' || !isDigit(data[p+2]) {
		return -1
	}
	p += 3
	end := -1
	switch {
	case p+8 <= len(data) && digitRun(data, p) >= 8:
		end = p + 8
	case p+10 <= len(data) && (data[p] == ' ' || data[p] == '-'):
		sep := data[p]
		if digitRun(data, p+1) >= 4 && data[p+5] == sep && digitRun(data, p+6) >= 4 {
			end = p + 10
		}
	}
	if end < 0 || !endsWord(data, end) {
		return -1
	}
	return end
}

// bankCardAt: 13–19 contiguous digits, or a first group of exactly four
// digits followed by two to four more groups (maximal runs of 1–6 digits)
// joined by one repeated space or dash, 13–19 digits in all: the longest
// such prefix that passes the Luhn check and is not followed by a letter.
// r is the digit run at i.
func bankCardAt(data []byte, i, r int) int {
	if r >= 13 && r <= 19 {
		end := i + r
		if endsWord(data, end) && luhn(data[i:end]) {
			return end
		}
		return -1
	}
	if r != 4 || i+5 >= len(data) || (data[i+4] != ' ' && data[i+4] != '-') || !isDigit(data[i+5]) {
		return -1
	}
	sep := data[i+4]
	var ends [5]int
	var digits [5]int
	ends[0], digits[0] = i+4, 4
	n := 1
	for n < 5 {
		p := ends[n-1]
		if p+1 >= len(data) || data[p] != sep || !isDigit(data[p+1]) {
			break
		}
		l := digitRun(data, p+1)
		if l > 6 {
			break
		}
		ends[n], digits[n] = p+1+l, digits[n-1]+l
		n++
	}
	for k := n - 1; k >= 2; k-- {
		if digits[k] < 13 || digits[k] > 19 || !endsWord(data, ends[k]) {
			continue
		}
		if luhn(data[i:ends[k]]) {
			return ends[k]
		}
	}
	return -1
}

// apiKey is one provider key shape: prefix, then a maximal run of body
// bytes of length min..max (max 0 = unbounded).
type apiKey struct {
	prefix   string
	body     func(byte) bool
	min, max int
	digit    bool // the body must contain a digit
}

func isUpperDigit(c byte) bool { return 'A' <= c && c <= 'Z' || isDigit(c) }
func isSlackByte(c byte) bool  { return isAlnum(c) || c == '-' }
func isPATByte(c byte) bool    { return isAlnum(c) || c == '_' }

var apiKeys = []apiKey{
	{prefix: "sk-", body: isTokenByte, min: 20, digit: true}, // OpenAI (sk-proj-…), Anthropic (sk-ant-…), DeepSeek, …
	{prefix: "AKIA", body: isUpperDigit, min: 16, max: 16},   // AWS access key id
	{prefix: "ASIA", body: isUpperDigit, min: 16, max: 16},   // AWS temporary access key id
	{prefix: "AIza", body: isTokenByte, min: 35, max: 35},    // Google API key
	{prefix: "ghp_", body: isAlnum, min: 36, max: 36},        // GitHub tokens
	{prefix: "gho_", body: isAlnum, min: 36, max: 36},
	{prefix: "ghu_", body: isAlnum, min: 36, max: 36},
	{prefix: "ghs_", body: isAlnum, min: 36, max: 36},
	{prefix: "ghr_", body: isAlnum, min: 36, max: 36},
	{prefix: "github_pat_", body: isPATByte, min: 22},
	{prefix: "xoxa-", body: isSlackByte, min: 10}, // Slack tokens
	{prefix: "xoxb-", body: isSlackByte, min: 10},
	{prefix: "xoxp-", body: isSlackByte, min: 10},
	{prefix: "xoxr-", body: isSlackByte, min: 10},
	{prefix: "xoxs-", body: isSlackByte, min: 10},
}

// apiKeyAt matches a key shape at i (the previous byte is not
// [A-Za-z0-9_-]); the key must not be followed by [A-Za-z0-9_-].
func apiKeyAt(data []byte, i int) int {
	// Fast path - a word starting with A is rarely a key: the second byte
	// rules most of them out.
	if i+1 >= len(data) || !apiSecond[data[i+1]] {
		return -1
	}
	for k := range apiKeys {
		a := &apiKeys[k]
		if !hasPrefixAt(data, i, a.prefix) {
			continue
		}
		p := i + len(a.prefix)
		q, digit := p, false
		for q < len(data) && a.body(data[q]) {
			digit = digit || isDigit(data[q])
			q++
		}
		n := q - p
		if n < a.min || a.max > 0 && n > a.max || a.digit && !digit {
			continue
		}
		if q < len(data) && isTokenByte(data[q]) {
			continue
		}
		return q
	}
	return -1
}

// apiSecond marks the second bytes of the key prefixes.
var apiSecond = func() (t [256]bool) {
	for _, a := range apiKeys {
		t[a.prefix[1]] = true
	}
	return t
}()

func hasPrefixAt(data []byte, i int, prefix string) bool {
	if len(data)-i < len(prefix) {
		return false
	}
	for k := 0; k < len(prefix); k++ {
		if data[i+k] != prefix[k] {
			return false
		}
	}
	return true
}
