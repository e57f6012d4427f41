package adapters

import (
	"net/url"
	"strings"
)

// SplitBase splits an absolute base URL into the part before the query
// (trailing slashes removed) and the query (without '?'); a fragment is
// dropped. User-info, host and path are kept exactly as written. It reports
// ErrConfig for a base that is not an absolute http or https URL.
func SplitBase(base string) (pre, query string, err error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", ErrConfig
	}
	pre, query, _ = strings.Cut(base, "?")
	if i := strings.IndexByte(pre, '#'); i >= 0 {
		pre = pre[:i]
	}
	if i := strings.IndexByte(query, '#'); i >= 0 {
		query = query[:i]
	}
	return strings.TrimRight(pre, "/"), query, nil
}

// JoinURL appends path (for example "/chat/completions") to a provider key's
// base URL, keeping the base's query after it (see SplitBase).
func JoinURL(base, path string) (string, error) {
	pre, query, err := SplitBase(base)
	if err != nil {
		return "", err
	}
	if query != "" {
		return pre + path + "?" + query, nil
	}
	return pre + path, nil
}
