package usagetest

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// GCSBinary returns the fake-gcs-server executable: $GW_FAKE_GCS, else the
// copy `make deps` installs under $HOME/.cache/gw/bin, else one in PATH; ""
// when none exists.
func GCSBinary() string {
	if p := os.Getenv("GW_FAKE_GCS"); p != "" {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "gw", "bin", "fake-gcs-server")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("fake-gcs-server"); err == nil {
		return p
	}
	return ""
}

// GCSServer is a real Cloud Storage emulator process (fake-gcs-server) with
// one bucket, behind a front that admits only the bearer tokens its OAuth
// token endpoint issued to the service account of CredentialsFile — so a
// test drives Application Default Credentials end to end: JWT-bearer grant
// signed with the account's key, token, authenticated JSON-API upload.
type GCSServer struct {
	// Host is for STORAGE_EMULATOR_HOST (http://127.0.0.1:<front port>).
	Host   string
	Bucket string
	// CredentialsFile is a service-account key file for
	// GOOGLE_APPLICATION_CREDENTIALS whose token_uri is the local endpoint.
	CredentialsFile string

	emu    string // the emulator's own base URL
	mu     sync.Mutex
	tokens map[string]bool
	grants int
	denied int
}

// StartGCS starts fake-gcs-server with bucket and the token endpoint and
// stops them with the test. It skips the test when the emulator is not
// installed (`make deps` builds it).
func StartGCS(tb testing.TB, bucket string) *GCSServer {
	tb.Helper()
	bin := GCSBinary()
	if bin == "" {
		tb.Skip("fake-gcs-server not found; run `make deps` (go install into ~/.cache/gw/bin) or set GW_FAKE_GCS")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	g := &GCSServer{Bucket: bucket, emu: "http://127.0.0.1:" + strconv.Itoa(port), tokens: map[string]bool{}}
	cmd := exec.Command(bin, "-scheme", "http", "-host", "127.0.0.1", "-port", strconv.Itoa(port), "-backend", "memory",
		"-public-host", "127.0.0.1:"+strconv.Itoa(port), "-log-level", "error")
	if err := cmd.Start(); err != nil {
		tb.Fatalf("cannot start fake-gcs-server: %v", err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		body, _ := json.Marshal(map[string]string{"name": bucket})
		resp, err := http.Post(g.emu+"/storage/v1/b?project=gw-test", "application/json", bytes.NewReader(body))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("fake-gcs-server did not come up: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	const email = "gw-usage@gw-test.iam.gserviceaccount.com"
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		claims := jwt.MapClaims{}
		_, err := jwt.ParseWithClaims(r.PostForm.Get("assertion"), claims, func(*jwt.Token) (any, error) { return &key.PublicKey, nil },
			jwt.WithValidMethods([]string{"RS256"}))
		if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || err != nil || claims["iss"] != email ||
			!strings.Contains(claims["scope"].(string), "devstorage") {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		g.mu.Lock()
		g.grants++
		tok := "ya29.test-" + strconv.Itoa(g.grants)
		g.tokens[tok] = true
		g.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
	}))
	tb.Cleanup(tokenSrv.Close)

	target, _ := url.Parse(g.emu)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		ok := g.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok {
			g.denied++
		}
		g.mu.Unlock()
		if !ok {
			http.Error(w, `{"error":{"code":401,"message":"Invalid Credentials"}}`, http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	tb.Cleanup(front.Close)
	g.Host = front.URL

	der := x509.MarshalPKCS1PrivateKey(key)
	doc, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "gw-test", "private_key_id": "k1", "client_email": email, "client_id": "1",
		"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: der})),
		"token_uri":   tokenSrv.URL + "/token",
	})
	g.CredentialsFile = filepath.Join(tb.TempDir(), "sa.json")
	if err := os.WriteFile(g.CredentialsFile, doc, 0o600); err != nil {
		tb.Fatal(err)
	}
	return g
}

// Grants is how many access tokens the token endpoint issued; Denied how
// many requests the front refused for a missing or unknown token.
func (g *GCSServer) Grants() int { g.mu.Lock(); defer g.mu.Unlock(); return g.grants }
func (g *GCSServer) Denied() int { g.mu.Lock(); defer g.mu.Unlock(); return g.denied }

// ContentEncoding returns the contentEncoding of object name's metadata.
// (Objects reads the objects through Go's client, which inflates a gzip
// one as a browser would.)
func (g *GCSServer) ContentEncoding(tb testing.TB, name string) string {
	tb.Helper()
	resp, err := http.Get(g.emu + "/storage/v1/b/" + g.Bucket + "/o/" + url.PathEscape(name))
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var meta struct {
		ContentEncoding string `json:"contentEncoding"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&meta); err != nil {
		tb.Fatal(err)
	}
	return meta.ContentEncoding
}

// Objects returns the bucket's objects by name, read from the emulator.
func (g *GCSServer) Objects(tb testing.TB) map[string][]byte {
	tb.Helper()
	resp, err := http.Get(g.emu + "/storage/v1/b/" + g.Bucket + "/o")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Items []struct {
			Name string `json:"name"`
		} `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		tb.Fatal(err)
	}
	out := map[string][]byte{}
	for _, it := range list.Items {
		r, err := http.Get(g.emu + "/storage/v1/b/" + g.Bucket + "/o/" + url.PathEscape(it.Name) + "?alt=media")
		if err != nil {
			tb.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		out[it.Name] = b
	}
	return out
}
