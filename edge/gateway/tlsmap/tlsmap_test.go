package tlsmap

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"testing"
	"time"

	admingw "gw/admin/gateway"
	"gw/admin/store"
)

// selfSigned returns a PEM certificate and key for names.
func selfSigned(t testing.TB, cn string, names ...string) (string, string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, _ := x509.MarshalPKCS8PrivateKey(k)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd}))
}

func sslJSON(t testing.TB, cn string, extra map[string]any, snis ...string) []byte {
	cert, key := selfSigned(t, cn, snis...)
	m := map[string]any{"cert": cert, "key": key, "snis": snis}
	for k, v := range extra {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return b
}

func snapOf(t testing.TB, ssls map[string][]byte) *admingw.Snapshot {
	t.Helper()
	st := admingw.NewState("/gw")
	for id, body := range ssls {
		st.Apply(store.Event{Type: store.EventPut, KV: store.KV{Key: "/gw/ssls/" + id, Value: body, ModRev: 1}})
	}
	s := admingw.Compile(st, 1)
	if len(s.Errors) > 0 {
		t.Fatalf("compile: %+v", s.Errors)
	}
	return s
}

func cnOf(cfg *tls.Config) string {
	if cfg == nil {
		return ""
	}
	return cfg.Certificates[0].Leaf.Subject.CommonName
}

func TestLookup(t *testing.T) {
	snap := snapOf(t, map[string][]byte{
		"1": sslJSON(t, "exact", nil, "api.example.com"),
		"2": sslJSON(t, "wild", nil, "*.example.com"),
		"3": sslJSON(t, "deep", nil, "*.eu.example.com"),
		"4": sslJSON(t, "off", map[string]any{"status": 0}, "off.example.com"),
		"5": sslJSON(t, "old", map[string]any{"ssl_protocols": []string{"TLSv1.3"}}, "tls13.test"),
	})
	m, _, skipped := Build(snap, nil)
	if len(skipped) > 0 {
		t.Fatalf("skipped: %v", skipped)
	}
	for _, tc := range []struct{ sni, want string }{
		{"api.example.com", "exact"},
		{"API.Example.COM", "exact"},
		{"api.example.com.", "exact"},
		{"www.example.com", "wild"},
		{"a.b.example.com", "wild"},
		{"x.eu.example.com", "deep"},
		{"example.com", ""},
		{"off.example.com", "wild"}, // disabled: the wildcard serves it
		{"tls13.test", "old"},
		{"", ""},
		{"other.test", ""},
	} {
		if got := cnOf(m.Lookup(tc.sni)); got != tc.want {
			t.Errorf("%q: got %q; want %q", tc.sni, got, tc.want)
		}
	}
	if c := m.Lookup("tls13.test"); c.MinVersion != tls.VersionTLS13 || c.MaxVersion != tls.VersionTLS13 {
		t.Errorf("ssl_protocols TLSv1.3: versions %x-%x", c.MinVersion, c.MaxVersion)
	}
	if c := m.Lookup("api.example.com"); c.MinVersion != tls.VersionTLS12 || c.MaxVersion != tls.VersionTLS13 {
		t.Errorf("default protocols: versions %x-%x", c.MinVersion, c.MaxVersion)
	}
}

func TestPattern(t *testing.T) {
	for _, tc := range []struct {
		in, key  string
		wild, ok bool
	}{
		{"a.b", "a.b", false, true},
		{"*.B.c", ".b.c", true, true},
		{"*.", "", false, false},
		{"*", "", false, false},
		{"a.*.c", "", false, false},
		{"", "", false, false},
		{"x.y.", "x.y", false, true},
		{"Ђ", "", false, false},           // not ASCII (fuzz/testdata FuzzGatewaySNIPattern de6584450b2aecf0)
		{"*.bücher.de", "", false, false}, // IDNs are configured as punycode: *.xn--bcher-kva.de
	} {
		k, w, ok := Pattern(tc.in)
		if k != tc.key || w != tc.wild || ok != tc.ok {
			t.Errorf("%q: got %q %v %v", tc.in, k, w, ok)
		}
	}
}

// TestHandshake: a real crypto/tls client gets the certificate of its
// SNI, a disabled or unknown SNI fails, and a new snapshot rotates the
// certificate without a new listener.
func TestHandshake(t *testing.T) {
	h := &admingw.Holder{}
	h.Store(snapOf(t, map[string][]byte{"1": sslJSON(t, "one", nil, "a.test"), "2": sslJSON(t, "two", nil, "*.b.test")}))
	s := NewStore(h, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ln, err := tls.Listen("tcp", "127.0.0.1:0", s.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _ = c.(*tls.Conn).Handshake(); c.Close() }()
		}
	}()
	hs := func(sni string) (string, error) {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{ServerName: sni, InsecureSkipVerify: true})
		if err != nil {
			return "", err
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
	}
	if cn, err := hs("a.test"); cn != "one" {
		t.Errorf("a.test: %q %v", cn, err)
	}
	if cn, err := hs("x.b.test"); cn != "two" {
		t.Errorf("x.b.test: %q %v", cn, err)
	}
	if _, err := hs("c.test"); err == nil {
		t.Error("unknown SNI: handshake succeeded")
	}
	h.Store(snapOf(t, map[string][]byte{"1": sslJSON(t, "one-rotated", nil, "a.test")}))
	if cn, err := hs("a.test"); cn != "one-rotated" {
		t.Errorf("after rotation: %q %v", cn, err)
	}
	if _, err := hs("x.b.test"); err == nil {
		t.Error("deleted certificate still served")
	}
}

func BenchmarkLookup(b *testing.B) {
	ssls := map[string][]byte{}
	cert, key := selfSigned(b, "x", "x")
	for i := 0; i < 1000; i++ {
		body, _ := json.Marshal(map[string]any{"cert": cert, "key": key, "snis": []string{"host" + itoa(i) + ".example.com", "*.w" + itoa(i) + ".example.org"}})
		ssls[itoa(i)] = body
	}
	m, _, _ := Build(snapOf(b, ssls), nil)
	b.Run("exact", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if m.Lookup("Host500.example.com") == nil {
				b.Fatal("miss")
			}
		}
	})
	b.Run("wildcard", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if m.Lookup("api.eu.w500.example.org") == nil {
				b.Fatal("miss")
			}
		}
	})
}

func TestLookupAllocs(t *testing.T) {
	m, _, _ := Build(snapOf(t, map[string][]byte{"1": sslJSON(t, "w", nil, "*.example.com")}), nil)
	if n := testing.AllocsPerRun(100, func() { m.Lookup("A.B.Example.com") }); n != 0 {
		t.Errorf("%.1f allocs per lookup", n)
	}
}

func itoa(i int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		if i /= 10; i == 0 {
			return string(b)
		}
	}
}
