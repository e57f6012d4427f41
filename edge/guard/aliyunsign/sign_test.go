package aliyunsign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestEncode(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		if got := Encode(in); got != want {
			t.Fatalf("Encode(%q): got %q; want %q", in, got, want)
		}
	}
	f("llm_query_moderation", "llm_query_moderation")
	f("a b", "a%20b")
	f("a+b*c~d", "a%2Bb%2Ac~d")
	f(`{"content":"é"}`, "%7B%22content%22%3A%22%C3%A9%22%7D")
	f("", "")
}

// TestSign checks the signature against the documented steps written out
// by hand: canonical request, string to sign, HMAC-SHA256 hex.
func TestSign(t *testing.T) {
	s := New("AKID", "secret")
	body := []byte("ServiceParameters=%7B%7D")
	r := &Request{Method: "POST", Path: "/",
		Query: []Header{{"Service", "llm_query_moderation"}, {"A", "x y"}},
		Headers: []Header{
			{"x-acs-version", "2022-03-02"}, {"host", "green-cip.cn-shanghai.aliyuncs.com"},
			{"x-acs-action", "TextModerationPlus"}, {"content-type", "application/x-www-form-urlencoded"},
			{"x-acs-date", "2026-01-02T03:04:05Z"}, {"x-acs-signature-nonce", "n1"},
		}, Body: body}
	auth, hash := s.Sign(r)
	sum := sha256.Sum256(body)
	if hash != hex.EncodeToString(sum[:]) {
		t.Fatalf("payload hash: got %s", hash)
	}
	canon := "POST\n/\nA=x%20y&Service=llm_query_moderation\n" +
		"content-type:application/x-www-form-urlencoded\n" +
		"host:green-cip.cn-shanghai.aliyuncs.com\n" +
		"x-acs-action:TextModerationPlus\n" +
		"x-acs-content-sha256:" + hash + "\n" +
		"x-acs-date:2026-01-02T03:04:05Z\n" +
		"x-acs-signature-nonce:n1\n" +
		"x-acs-version:2022-03-02\n" +
		"\n" +
		"content-type;host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version\n" + hash
	h := sha256.Sum256([]byte(canon))
	m := hmac.New(sha256.New, []byte("secret"))
	m.Write([]byte("ACS3-HMAC-SHA256\n" + hex.EncodeToString(h[:])))
	want := "ACS3-HMAC-SHA256 Credential=AKID,SignedHeaders=content-type;host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version,Signature=" +
		hex.EncodeToString(m.Sum(nil))
	if auth != want {
		t.Fatalf("got  %s\nwant %s", auth, want)
	}
	if strings.Contains(auth, "secret") {
		t.Fatal("the authorization carries the secret")
	}
}

func BenchmarkSign(b *testing.B) {
	s := New("AKID", "secret")
	body := []byte(strings.Repeat("x", 2000))
	r := &Request{Method: "POST", Path: "/", Query: []Header{{"Service", "llm_query_moderation"}},
		Headers: []Header{{"host", "h"}, {"content-type", "application/x-www-form-urlencoded"}, {"x-acs-action", "TextModerationPlus"},
			{"x-acs-version", "2022-03-02"}, {"x-acs-date", "2026-01-02T03:04:05Z"}, {"x-acs-signature-nonce", "n"}}, Body: body}
	b.ReportAllocs()
	for b.Loop() {
		s.Sign(r)
	}
}
