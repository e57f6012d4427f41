// Package aliyunsign signs Alibaba Cloud OpenAPI requests with the V3
// signature, ACS3-HMAC-SHA256: the scheme the current Alibaba Cloud SDKs
// (darabonba openapi, the green 2022-03-02 clients) use for the Content
// Moderation and AI Guardrails actions (TextModerationPlus, MultiModalGuard).
//
// The algorithm, as Alibaba Cloud documents it ("Request syntax and
// signature method V3"):
//
//	CanonicalRequest = Method \n CanonicalURI \n CanonicalQueryString \n
//	                   CanonicalHeaders \n SignedHeaders \n HashedRequestPayload
//	StringToSign     = "ACS3-HMAC-SHA256" \n hex(sha256(CanonicalRequest))
//	Signature        = hex(hmac_sha256(AccessKeySecret, StringToSign))
//	Authorization    = ACS3-HMAC-SHA256 Credential=<AccessKeyId>,
//	                   SignedHeaders=<names>,Signature=<sig>
//
// CanonicalHeaders are host, content-type and every x-acs-* header, names
// lower-cased and sorted, "name:value\n" each; query names and values are
// percent-encoded per RFC 3986 (space %20, '*' %2A, '~' kept) and sorted.
// The signer here signs exactly the headers it is given; it never logs or
// returns the secret.
package aliyunsign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"sort"
	"strings"
)

// Algorithm is the signature algorithm name.
const Algorithm = "ACS3-HMAC-SHA256"

// Header is one signed header: Name lower-case.
type Header struct{ Name, Value string }

// Request is what one signature covers.
type Request struct {
	Method string // "POST"
	Path   string // the canonical URI: the path as sent, "/" when empty
	// Query holds the query parameters, unencoded, in any order.
	Query []Header
	// Headers are the headers to sign (host, content-type, x-acs-*), with
	// lower-case names; x-acs-content-sha256 is added by Sign.
	Headers []Header
	Body    []byte
}

// Signer holds one access key pair. It is safe for concurrent use.
type Signer struct {
	keyID  string
	secret []byte
}

// New returns a Signer for the access key pair.
func New(keyID, secret string) *Signer { return &Signer{keyID: keyID, secret: []byte(secret)} }

// Sign returns the Authorization header value of r and the hex SHA-256 of
// the body (the x-acs-content-sha256 header value, which it signs too).
func (s *Signer) Sign(r *Request) (authorization, payloadHash string) {
	payloadHash = HashHex(r.Body)
	hdrs := make([]Header, 0, len(r.Headers)+1)
	hdrs = append(hdrs, r.Headers...)
	hdrs = append(hdrs, Header{"x-acs-content-sha256", payloadHash})
	canon, signed := CanonicalRequest(r.Method, r.Path, r.Query, hdrs, payloadHash)
	sig := Signature(s.secret, canon)
	return Algorithm + " Credential=" + s.keyID + ",SignedHeaders=" + signed + ",Signature=" + sig, payloadHash
}

// CanonicalRequest builds the canonical request and the SignedHeaders list
// of the given parts. Exported for verifiers (the test mock).
func CanonicalRequest(method, path string, query, headers []Header, payloadHash string) (canon, signedHeaders string) {
	if path == "" {
		path = "/"
	}
	q := append([]Header(nil), query...)
	for i := range q {
		q[i] = Header{Encode(q[i].Name), Encode(q[i].Value)}
	}
	sort.Slice(q, func(i, j int) bool {
		if q[i].Name != q[j].Name {
			return q[i].Name < q[j].Name
		}
		return q[i].Value < q[j].Value
	})
	h := append([]Header(nil), headers...)
	for i := range h {
		h[i] = Header{strings.ToLower(strings.TrimSpace(h[i].Name)), strings.TrimSpace(h[i].Value)}
	}
	sort.Slice(h, func(i, j int) bool { return h[i].Name < h[j].Name })

	var b strings.Builder
	b.Grow(256 + len(path))
	b.WriteString(method)
	b.WriteByte('\n')
	b.WriteString(path)
	b.WriteByte('\n')
	for i, p := range q {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.Name)
		b.WriteByte('=')
		b.WriteString(p.Value)
	}
	b.WriteByte('\n')
	var sh strings.Builder
	for i, x := range h {
		b.WriteString(x.Name)
		b.WriteByte(':')
		b.WriteString(x.Value)
		b.WriteByte('\n')
		if i > 0 {
			sh.WriteByte(';')
		}
		sh.WriteString(x.Name)
	}
	b.WriteByte('\n')
	b.WriteString(sh.String())
	b.WriteByte('\n')
	b.WriteString(payloadHash)
	return b.String(), sh.String()
}

// Signature is hex(hmac_sha256(secret, "ACS3-HMAC-SHA256\n" + hex(sha256(canon)))).
func Signature(secret []byte, canon string) string {
	sts := Algorithm + "\n" + HashHex([]byte(canon))
	var m hash.Hash = hmac.New(sha256.New, secret)
	m.Write([]byte(sts))
	return hex.EncodeToString(m.Sum(nil))
}

// HashHex is the lower-case hex SHA-256 of b.
func HashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Encode percent-encodes s per RFC 3986 as Alibaba Cloud canonicalises
// query strings: unreserved bytes (A-Z a-z 0-9 - _ . ~) kept, every other
// byte %XX upper-case (so space is %20, never '+').
func Encode(s string) string {
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			return string(AppendEncode(make([]byte, 0, len(s)+16), []byte(s)))
		}
	}
	return s // fast path - nothing to encode
}

// AppendEncode appends b encoded as Encode does (also a valid
// application/x-www-form-urlencoded value).
func AppendEncode(dst, b []byte) []byte {
	const hexd = "0123456789ABCDEF"
	for _, c := range b {
		if unreserved(c) {
			dst = append(dst, c)
		} else {
			dst = append(dst, '%', hexd[c>>4], hexd[c&15])
		}
	}
	return dst
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~'
}
