package redact

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		if got := String(in); got != want {
			t.Fatalf("String(%q)\n got %q\nwant %q", in, got, want)
		}
	}
	f("", "")
	f("cannot parse request", "cannot parse request")
	// Raw and %q-escaped header dumps.
	f("Authorization: Bearer sk-live-123\r\nHost: gw\r\n", "Authorization: [REDACTED]\r\nHost: gw\r\n")
	f(`"POST /v1 HTTP/1.1\r\nauthorization: Bearer abc.def\r\nx-api-key: k-123\r\n"`, `"POST /v1 HTTP/1.1\r\nauthorization: [REDACTED]\r\nx-api-key: [REDACTED]\r\n"`)
	f("Cookie: session=abc; other=1\n", "Cookie: [REDACTED]\n")
	f("proxy-authorization: Basic dXNlcjpwYXNz", "proxy-authorization: [REDACTED]")
	// Token-shaped values anywhere.
	f("token Bearer abcdef123 rejected", "token Bearer [REDACTED] rejected")
	f("key sk-ant-api03-abcdefghij in body", "key [REDACTED] in body")
	f("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig-part_1 end", "jwt [REDACTED] end")
	f("aws AKIAABCDEFGHIJKLMNOP here", "aws [REDACTED] here")
	f("blob 0123456789abcdef0123456789abcdef01 tail", "blob [REDACTED] tail")
	f("-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----", "[REDACTED]")
	// Ordinary words, addresses and numbers stay.
	f(`error when serving connection "127.0.0.1:8080"<->"127.0.0.1:5555": timeout`, `error when serving connection "127.0.0.1:8080"<->"127.0.0.1:5555": timeout`)
}

func TestStringNeverLeaks(t *testing.T) {
	secret := "sk-gw-0123456789secret"
	for _, in := range []string{
		"Authorization: Bearer " + secret,
		"authorization:" + secret,
		"X-Api-Key:   " + secret + "\\r\\n",
		`{"key":"` + secret + `"}`,
		"Bearer\t" + secret,
	} {
		if out := String(in); strings.Contains(out, "0123456789secret") {
			t.Fatalf("%q leaked: %q", in, out)
		}
	}
}
