package vertex

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"gw/adapters"
)

// Scope is the OAuth scope of Vertex AI calls.
const Scope = "https://www.googleapis.com/auth/cloud-platform"

// Document is what gw reads of a vertex key's credential document (api_key:
// one ${VAR} holding JSON): a Google credential file — a service account
// key as downloaded from the console — plus gw's own members. Without a
// `type` member the key uses Google's default credentials
// (GOOGLE_APPLICATION_CREDENTIALS, gcloud's user credentials, the metadata
// server).
type Document struct {
	// Type is the credential file's type (service_account, ...); "" selects
	// the default credentials.
	Type string `json:"type"`
	// ProjectID is the service account's project.
	ProjectID string `json:"project_id"`
	// Project overrides ProjectID (gw's member): the project whose Vertex
	// AI is called, which may differ from the service account's.
	Project string `json:"project"`
	// Location is the Vertex region (gw's member): us-central1 (default),
	// europe-west4, global, us, eu ...
	Location string `json:"location"`
}

// DefaultLocation is used when the document names none.
const DefaultLocation = "us-central1"

// errDocument never carries the document's bytes: it holds a private key.
var errDocument = errors.New("vertex: the credential document (api_key) is not a JSON object")

// parseDocument reads the gw members of a credential document.
func parseDocument(doc string) (*Document, error) {
	var d Document
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		return nil, errDocument
	}
	if d.Project == "" {
		d.Project = d.ProjectID
	}
	if d.Location == "" {
		d.Location = DefaultLocation
	}
	if d.Project == "" {
		return nil, errors.New("vertex: the credential document names no project (project_id or project)")
	}
	for _, c := range d.Project + d.Location {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return nil, errors.New("vertex: the credential document's project or location holds characters a URL path cannot carry")
		}
	}
	return &d, nil
}

// errToken is every token failure: it never quotes the token endpoint's
// answer, and it is adapters.ErrCredential, so the edge fails the attempt
// over to another target.
var errToken = fmt.Errorf("vertex: cannot obtain an access token from the credential: %w", adapters.ErrCredential)

// fetchFunc obtains a new access token.
type fetchFunc func(ctx context.Context) (*oauth2.Token, error)

// tokenClient is the HTTP client of token requests (the token endpoint
// from the document's token_uri, or the metadata server).
var tokenClient = &http.Client{Timeout: 30 * time.Second}

// newFetch builds the token fetcher of a credential document.
func newFetch(doc string, d *Document) (fetchFunc, error) {
	switch d.Type {
	case "":
		var (
			mu sync.Mutex
			ts oauth2.TokenSource
		)
		return func(ctx context.Context) (*oauth2.Token, error) {
			mu.Lock()
			defer mu.Unlock()
			if ts == nil {
				creds, err := google.FindDefaultCredentials(ctx, Scope)
				if err != nil {
					return nil, errors.New("vertex: cannot find Google default credentials")
				}
				ts = creds.TokenSource
			}
			return ts.Token()
		}, nil
	case "service_account":
		jc, err := google.JWTConfigFromJSON([]byte(doc), Scope)
		if err != nil || !validKey(jc.PrivateKey) {
			return nil, errors.New("vertex: the credential document is not a usable service account key (private_key, client_email)")
		}
		// A fresh source per fetch: the library's own cache would hand the
		// old token back when gw refreshes ahead of expiry.
		return func(ctx context.Context) (*oauth2.Token, error) { return jc.TokenSource(ctx).Token() }, nil
	default:
		creds, err := google.CredentialsFromJSON(context.Background(), []byte(doc), Scope)
		if err != nil {
			return nil, errors.New("vertex: the credential document is not a usable Google credential file")
		}
		return func(context.Context) (*oauth2.Token, error) { return creds.TokenSource.Token() }, nil
	}
}

// validKey reports whether pemKey is an RSA private key (PKCS#8 or #1), so
// a broken document fails the load, not the first request.
func validKey(pemKey []byte) bool {
	blk, _ := pem.Decode(pemKey)
	if blk == nil {
		return false
	}
	if k, err := x509.ParsePKCS8PrivateKey(blk.Bytes); err == nil {
		_, ok := k.(*rsa.PrivateKey)
		return ok
	}
	_, err := x509.ParsePKCS1PrivateKey(blk.Bytes)
	return err == nil
}

// Tokens caches one key's access token as its ready-made Authorization
// value. Header never waits while a valid token is cached: from a quarter
// of the token's life before expiry (at most 5 minutes) the first caller
// starts one background refresh and keeps using the current token; only
// when no usable token exists do callers wait, all on the same single
// refresh. The token never appears in errors or logs.
type Tokens struct {
	fetch fetchFunc
	cur   atomic.Pointer[bearer]

	mu       sync.Mutex
	flight   *flight
	failedAt atomic.Int64 // unix nanos of the last failed background refresh
}

// bearer is one cached token.
type bearer struct {
	hdr       []byte // "Bearer <token>"
	refreshAt int64  // unix nanos: start a background refresh from here
	validTo   int64  // unix nanos: not used from here (expiry less a skew margin)
}

// flight is one running refresh; done is closed when it ends.
type flight struct {
	done chan struct{}
	err  error
}

// newTokens returns an empty cache over fetch.
func newTokens(fetch fetchFunc) *Tokens { return &Tokens{fetch: fetch} }

// retryGap spaces background refreshes after a failure.
const retryGap = time.Second

// Header returns the Authorization header value; its bytes must not be
// modified and stay valid (they are never reused).
func (t *Tokens) Header() ([]byte, error) {
	b := t.cur.Load()
	now := time.Now().UnixNano()
	if b != nil && now < b.refreshAt {
		// Fast path - a fresh token.
		return b.hdr, nil
	}
	if b != nil && now < b.validTo {
		if now-t.failedAt.Load() > int64(retryGap) {
			t.start()
		}
		return b.hdr, nil
	}
	// Slow path - no usable token. Right after a failed fetch the attempt
	// fails at once (failover to another target, not a wait on a token
	// endpoint that just failed); otherwise wait for the single refresh.
	if now-t.failedAt.Load() < int64(retryGap) {
		return nil, errToken
	}
	f := t.start()
	<-f.done
	if f.err != nil {
		return nil, f.err
	}
	if b = t.cur.Load(); b == nil {
		return nil, errToken
	}
	return b.hdr, nil
}

// start returns the running refresh, starting one if none runs.
func (t *Tokens) start() *flight {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.flight != nil {
		return t.flight
	}
	f := &flight{done: make(chan struct{})}
	t.flight = f
	go t.run(f)
	return f
}

func (t *Tokens) run(f *flight) {
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), oauth2.HTTPClient, tokenClient), 30*time.Second)
	defer cancel()
	tok, err := t.fetch(ctx)
	if err == nil && (tok == nil || tok.AccessToken == "") {
		err = errors.New("empty token")
	}
	if err != nil {
		// The library's error may quote the token endpoint's answer; keep
		// only that it failed.
		f.err = errToken
		t.failedAt.Store(time.Now().UnixNano())
	} else {
		t.cur.Store(newBearer(tok, time.Now()))
	}
	t.mu.Lock()
	t.flight = nil
	t.mu.Unlock()
	close(f.done)
}

// newBearer computes the refresh and validity marks of tok obtained at now.
func newBearer(tok *oauth2.Token, now time.Time) *bearer {
	exp := tok.Expiry
	if exp.IsZero() {
		exp = now.Add(time.Hour)
	}
	life := exp.Sub(now)
	if life < 0 {
		life = 0
	}
	early := min(5*time.Minute, life/4)
	skew := min(10*time.Second, life/10)
	hdr := make([]byte, 0, len("Bearer ")+len(tok.AccessToken))
	hdr = append(append(hdr, "Bearer "...), tok.AccessToken...)
	return &bearer{hdr: hdr, refreshAt: exp.Add(-early).UnixNano(), validTo: exp.Add(-skew).UnixNano()}
}
