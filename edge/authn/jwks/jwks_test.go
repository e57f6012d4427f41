package jwks

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"strings"
	"testing"

	"github.com/MicahParks/jwkset"
)

func jwk(t *testing.T, pub any, kid string, use jwkset.USE) jwkset.JWKMarshal {
	t.Helper()
	j, err := jwkset.NewJWKFromKey(pub, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid, USE: use}})
	if err != nil {
		t.Fatal(err)
	}
	return j.Marshal()
}

func TestParse(t *testing.T) {
	big, _ := rsa.GenerateKey(rand.Reader, 2048)
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	edPub, _, _ := ed25519.GenerateKey(rand.Reader)
	set := jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{
		jwk(t, &big.PublicKey, "r", jwkset.UseSig),
		jwk(t, &small.PublicKey, "small", jwkset.UseSig), // below MinRSABits: skipped
		jwk(t, &ec.PublicKey, "e", ""),
		jwk(t, edPub, "d", jwkset.UseSig),
		jwk(t, &ec.PublicKey, "enc", jwkset.UseEnc),                            // not a signing key: skipped
		{KTY: jwkset.KtyOct, KID: "hmac", K: "c2VjcmV0"},                       // symmetric: skipped
		{KTY: jwkset.KtyEC, KID: "bad", CRV: jwkset.CrvP256, X: "AA", Y: "AA"}, // not on the curve: skipped
		{KTY: "weird", KID: "w"},
	}}
	doc, _ := json.Marshal(set)
	keys, err := Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, k := range keys {
		kids = append(kids, k.KID)
	}
	if got := strings.Join(kids, ","); got != "d,e,r" {
		t.Fatalf("kept %s; want d,e,r", got)
	}
	for _, bad := range []string{``, `[]`, `{"keys":[]}`, `{"keys":[{"kty":"oct","k":"eA"}]}`, `{"keys":{}}`} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

func TestMatch(t *testing.T) {
	ks := []Key{{KID: "a"}, {KID: "b"}, {KID: "b"}, {KID: "c"}}
	f := func(kid string, want int) {
		t.Helper()
		if got := len(match(ks, kid)); got != want {
			t.Fatalf("%q: %d keys; want %d", kid, got, want)
		}
	}
	f("", 4)
	f("a", 1)
	f("b", 2)
	f("z", 0)
}

func TestRedactURL(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		if got := redactURL(in); got != want {
			t.Fatalf("%q -> %q; want %q", in, got, want)
		}
	}
	f("https://user:pw@idp.example.com/keys", "https://idp.example.com/keys")
	f("https://idp.example.com/.well-known/openid-configuration", "https://idp.example.com/.well-known/openid-configuration")
}
