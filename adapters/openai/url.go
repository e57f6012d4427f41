package openai

import (
	"net/url"
	"strings"

	"gw/adapters"
)

// chatURL is base + "/chat/completions", the query of base kept after it.
func chatURL(base string) (string, error) { return adapters.JoinURL(base, "/chat/completions") }

// azureURLs decides the Azure OpenAI surface from api_base:
//
//   - path ending in /v1 (https://r.openai.azure.com/openai/v1): the v1
//     surface, base + /chat/completions, deployment in the body's `model`;
//     fixed is that URL;
//   - path holding /deployments/ (the deployment is part of api_base): base +
//     /chat/completions?api-version=V; fixed is that URL;
//   - otherwise the dated surface: base [+ /openai] + /deployments/ +
//     <upstream model, path-escaped> + /chat/completions?api-version=V;
//     prefix and suffix surround the deployment, fixed is "".
//
// V is the api-version in api_base's query if present (the query is kept as
// written), else version.
func azureURLs(base, version string) (fixed, prefix, suffix string, err error) {
	return azureURLsFor(base, version, "/chat/completions")
}

// azureURLsFor is azureURLs for the endpoint at path (/chat/completions,
// /embeddings ...).
func azureURLsFor(base, version, path string) (fixed, prefix, suffix string, err error) {
	pre, query, err := adapters.SplitBase(base)
	if err != nil {
		return "", "", "", err
	}
	u, _ := url.Parse(pre)
	upath := strings.TrimRight(u.EscapedPath(), "/")
	if strings.HasSuffix(upath, "/v1") {
		fixed, err = adapters.JoinURL(base, path)
		return fixed, "", "", err
	}
	q, _ := url.ParseQuery(query)
	if q.Get("api-version") == "" {
		if query != "" {
			query += "&"
		}
		query += "api-version=" + url.QueryEscape(version)
	}
	tail := path + "?" + query
	if strings.Contains(upath, "/deployments/") {
		return pre + tail, "", "", nil
	}
	if !strings.HasSuffix(upath, "/openai") {
		pre += "/openai"
	}
	return "", pre + "/deployments/", tail, nil
}

// appendPathSegment appends s escaped as one URL path segment: bytes outside
// RFC 3986 unreserved characters become %XX.
// The segments "." and ".." are escaped whole so that a model name cannot
// walk the path.
func appendPathSegment(dst []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	if s == "." || s == ".." {
		for range len(s) {
			dst = append(dst, "%2E"...)
		}
		return dst
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '-', c == '.', c == '_', c == '~':
			dst = append(dst, c)
		default:
			dst = append(dst, '%', hex[c>>4], hex[c&15])
		}
	}
	return dst
}
