package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestTokenCmd(t *testing.T) {
	const secret = "token-cmd-secret-at-least-32-bytes-long"
	t.Setenv("TOK_SECRET", secret)
	t.Setenv("TOK_SHORT", "short")
	f := func(wantRC int, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if rc := tokenCmd(args, &out, &errb); rc != wantRC {
			t.Fatalf("%v: rc %d; want %d (%s)", args, rc, wantRC, errb.String())
		}
		if strings.Contains(errb.String(), secret) {
			t.Fatal("the secret appears in an error")
		}
		return strings.TrimSpace(out.String())
	}
	tok := f(0, "--secret-env", "TOK_SECRET", "--sub", "ci-runner", "--iss", "me", "--aud", "a", "--aud", "b",
		"--scope", "x y", "--claim", "team=eng", "--ttl", "10m", "--alg", "HS384")
	parsed, err := jwt.Parse(tok, func(*jwt.Token) (any, error) { return []byte(secret), nil }, jwt.WithValidMethods([]string{"HS384"}))
	if err != nil {
		t.Fatal(err)
	}
	c := parsed.Claims.(jwt.MapClaims)
	exp, _ := c.GetExpirationTime()
	aud, _ := c.GetAudience()
	if c["sub"] != "ci-runner" || c["iss"] != "me" || c["scope"] != "x y" || c["team"] != "eng" ||
		strings.Join(aud, ",") != "a,b" || time.Until(exp.Time) > 10*time.Minute || time.Until(exp.Time) < 9*time.Minute {
		t.Fatalf("claims %v", c)
	}
	f(2)
	f(1, "--secret-env", "TOK_UNSET")
	f(1, "--secret-env", "TOK_SHORT")
	f(2, "--secret-env", "TOK_SECRET", "--alg", "RS256")
	f(2, "--secret-env", "TOK_SECRET", "--alg", "none")
	f(2, "--secret-env", "TOK_SECRET", "--claim", "novalue")
	f(2, "--secret-env", "TOK_SECRET", "--ttl", "-1s")
}
