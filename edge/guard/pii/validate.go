package pii

// Byte classes and the validators of the built-in detectors.

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isAlnum(c byte) bool { return isDigit(c) || isAlpha(c) }
func isHex(c byte) bool   { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// isTokenByte: the characters of API keys and JWT segments (base64url).
func isTokenByte(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }

func isLocalByte(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}

// digitRun returns the length of the run of ASCII digits at data[i:].
func digitRun(data []byte, i int) int {
	j := i
	for j < len(data) && isDigit(data[j]) {
		j++
	}
	return j - i
}

// luhn reports whether the digits of s (separators skipped) pass the Luhn
// check.
func luhn(s []byte) bool {
	sum, double := 0, false
	for k := len(s) - 1; k >= 0; k-- {
		c := s[k]
		if !isDigit(c) {
			continue
		}
		d := int(c - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}

// idCardWeights are the ISO 7064 MOD 11-2 weights of GB 11643-1999.
var idCardWeights = [17]int{7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2}

// validIDCard checks an 18-character mainland resident ID number: a region
// code not starting with 0, a plausible birth date (years 1800–2099, month
// 01–12, day 01–31) and the MOD 11-2 check character.
func validIDCard(s []byte) bool {
	if s[0] == '0' {
		return false
	}
	y := s[6:8]
	if !(y[0] == '1' && (y[1] == '8' || y[1] == '9') || y[0] == '2' && y[1] == '0') {
		return false
	}
	month := int(s[10]-'0')*10 + int(s[11]-'0')
	day := int(s[12]-'0')*10 + int(s[13]-'0')
	if month < 1 || month > 12 || day < 1 || day > 31 {
		return false
	}
	sum := 0
	for k := 0; k < 17; k++ {
		sum += int(s[k]-'0') * idCardWeights[k]
	}
	want := "10X98765432"[sum%11]
	got := s[17]
	if got == 'x' {
		got = 'X'
	}
	return got == want
}

// validSSN rejects the numbers the SSA never issues: area 000, 666 and
// 900–999, group 00, serial 0000. s is AAA-GG-SSSS.
func validSSN(s []byte) bool {
	area := s[0:3]
	if string(area) == "000" || string(area) == "666" || area[0] == '9' {
		return false
	}
	return string(s[4:6]) != "00" && string(s[7:11]) != "0000"
}

// ipv4At parses a dotted quad at data[i:] (decimal octets 0–255 without
// leading zeros) and returns its end, or -1. Each octet is a maximal digit
// run.
func ipv4At(data []byte, i int) int {
	p := i
	for k := 0; k < 4; k++ {
		if k > 0 {
			if p >= len(data) || data[p] != '.' {
				return -1
			}
			p++
		}
		r := digitRun(data, p)
		if r == 0 || r > 3 || r > 1 && data[p] == '0' {
			return -1
		}
		v := 0
		for _, c := range data[p : p+r] {
			v = v*10 + int(c-'0')
		}
		if v > 255 {
			return -1
		}
		p += r
	}
	return p
}

// validIPv6 reports whether s (bytes of [0-9A-Fa-f:.] only) is an IPv6
// address in the text forms net/netip accepts without a zone: up to eight
// groups of 1–4 hex digits, one "::" at most, an optional dotted-quad tail
// standing for the last two groups.
func validIPv6(s []byte) bool {
	groups, ellipsis := 0, -1
	i := 0
	if len(s) >= 2 && s[0] == ':' && s[1] == ':' {
		ellipsis = 0
		i = 2
		if i == len(s) {
			return true
		}
	}
	for i < len(s) {
		// A group: 1–4 hex digits, or the IPv4 tail.
		j := i
		for j < len(s) && isHex(s[j]) {
			j++
		}
		if j < len(s) && s[j] == '.' {
			// The tail: must end the string and fit.
			if ellipsis < 0 && groups != 6 || groups > 6 {
				return false
			}
			if end := ipv4At(s, i); end != len(s) {
				return false
			}
			groups += 2
			i = len(s)
			break
		}
		if j == i || j-i > 4 {
			return false
		}
		groups++
		i = j
		if i == len(s) {
			break
		}
		if s[i] != ':' {
			return false
		}
		i++
		if i < len(s) && s[i] == ':' {
			if ellipsis >= 0 {
				return false
			}
			ellipsis = groups
			i++
			if i == len(s) {
				break
			}
		} else if i == len(s) {
			return false // a trailing single colon
		}
		if groups > 8 {
			return false
		}
	}
	if ellipsis < 0 {
		return groups == 8
	}
	return groups < 8
}
