package openai

import "strings"

// IsReasoningModel reports whether the upstream model name names an OpenAI
// reasoning model, which rejects max_tokens in favour of
// max_completion_tokens. The test is on the name only, case-insensitively,
// after dropping everything up to the last '/' (as in "openai/o3"):
//
//   - the o-series: 'o', one or more digits, then the end, '-' or '.'
//     (o1, o1-mini, o3, o3-pro, o4-mini);
//   - gpt-N with N >= 5: "gpt-", digits, then the end, '-' or '.'
//     (gpt-5, gpt-5-mini, gpt-5.1, and later majors).
//
// Over-matching is harmless: every current OpenAI chat model accepts
// max_completion_tokens. Azure deployment names are free text, so a
// deployment not named after its model is not recognised; operators add
// `request.param_renames: {max_tokens: max_completion_tokens}` for those.
func IsReasoningModel(name string) bool {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	switch {
	case len(name) >= 2 && (name[0] == 'o' || name[0] == 'O'):
		return digitsThenBoundary(name[1:], 0)
	case len(name) >= 5 && strings.EqualFold(name[:4], "gpt-"):
		return digitsThenBoundary(name[4:], 5)
	}
	return false
}

// digitsThenBoundary reports whether s starts with a decimal number >= min
// (no leading zero) followed by the end of s, '-' or '.'.
func digitsThenBoundary(s string, min int) bool {
	n, i := 0, 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		if n > 1000 {
			return false
		}
		n = n*10 + int(s[i]-'0')
		i++
	}
	if i == 0 || (s[0] == '0' && i > 1) || n < min {
		return false
	}
	return i == len(s) || s[i] == '-' || s[i] == '.'
}
