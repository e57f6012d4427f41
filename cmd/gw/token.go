package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"gw/admin/resources"
)

const tokenUsage = `usage: gw token --secret-env NAME [--sub SUBJECT] [--iss ISSUER] [--aud AUD]... [--ttl 1h]
                [--scope "a b"] [--claim NAME=VALUE]... [--alg HS256|HS384|HS512]

Prints a JWT signed with the shared secret held in the environment variable
NAME, for an oidc_providers entry with hmac_secret (demos and tests). The
secret is read from the environment only, never from the command line.
`

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// tokenCmd implements `gw token`.
func tokenCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, tokenUsage); fs.PrintDefaults() }
	secretEnv := fs.String("secret-env", "", "environment variable holding the shared secret (required)")
	alg := fs.String("alg", "HS256", "HS256, HS384 or HS512")
	sub := fs.String("sub", "", "sub claim (the identity_claim default)")
	iss := fs.String("iss", "", "iss claim; omit for a provider without issuer")
	ttl := fs.Duration("ttl", time.Hour, "lifetime: exp = now + ttl")
	scope := fs.String("scope", "", "scope claim (space-separated)")
	var aud, claims listFlag
	fs.Var(&aud, "aud", "aud claim; repeat for several audiences")
	fs.Var(&claims, "claim", "extra string claim NAME=VALUE; repeat for several")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *secretEnv == "" || fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	secret, ok := os.LookupEnv(*secretEnv)
	if !ok || secret == "" {
		fmt.Fprintf(stderr, "gw token: environment variable %s is not set\n", *secretEnv)
		return 1
	}
	if len(secret) < resources.MinHMACSecretBytes {
		fmt.Fprintf(stderr, "gw token: the secret in %s is shorter than %d bytes; gw rejects such an hmac_secret\n", *secretEnv, resources.MinHMACSecretBytes)
		return 1
	}
	m := jwt.GetSigningMethod(*alg)
	if m == nil || !strings.HasPrefix(*alg, "HS") {
		fmt.Fprintf(stderr, "gw token: --alg must be HS256, HS384 or HS512\n")
		return 2
	}
	if *ttl <= 0 {
		fmt.Fprintln(stderr, "gw token: --ttl must be positive")
		return 2
	}
	now := time.Now()
	c := jwt.MapClaims{"iat": now.Unix(), "exp": now.Add(*ttl).Unix()}
	for _, kv := range claims {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			fmt.Fprintf(stderr, "gw token: --claim %q: want NAME=VALUE\n", kv)
			return 2
		}
		c[k] = v
	}
	if *sub != "" {
		c["sub"] = *sub
	}
	if *iss != "" {
		c["iss"] = *iss
	}
	if *scope != "" {
		c["scope"] = *scope
	}
	switch len(aud) {
	case 0:
	case 1:
		c["aud"] = aud[0]
	default:
		c["aud"] = []string(aud)
	}
	tok, err := jwt.NewWithClaims(m, c).SignedString([]byte(secret))
	if err != nil {
		fmt.Fprintln(stderr, "gw token: cannot sign:", err)
		return 1
	}
	fmt.Fprintln(stdout, tok)
	return 0
}
