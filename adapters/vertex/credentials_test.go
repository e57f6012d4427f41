package vertex

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"gw/adapters"
)

// fakeFetch issues token-<n> living life; block (when set) holds fetches.
type fakeFetch struct {
	n     atomic.Int32
	life  time.Duration
	fail  atomic.Bool
	block chan struct{}
}

func (f *fakeFetch) fetch(context.Context) (*oauth2.Token, error) {
	if f.block != nil {
		<-f.block
	}
	n := f.n.Add(1)
	if f.fail.Load() {
		return nil, errors.New("oauth2: cannot fetch token: 400\nResponse: {\"error\":\"invalid_grant\",\"secret\":\"leak\"}")
	}
	return &oauth2.Token{AccessToken: "token-" + string(rune('0'+n)), Expiry: time.Now().Add(f.life)}, nil
}

func TestTokensFreshCachedAndSingleFlight(t *testing.T) {
	f := &fakeFetch{life: time.Hour, block: make(chan struct{})}
	tk := newTokens(f.fetch)
	var wg sync.WaitGroup
	hdrs := make([]string, 8)
	for i := range hdrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := tk.Header()
			if err != nil {
				t.Error(err)
			}
			hdrs[i] = string(h)
		}()
	}
	time.Sleep(50 * time.Millisecond) // every caller waits on the one refresh
	close(f.block)
	wg.Wait()
	if n := f.n.Load(); n != 1 {
		t.Fatalf("cold start: %d fetches; want 1", n)
	}
	for _, h := range hdrs {
		if h != "Bearer token-1" {
			t.Fatalf("header %q", h)
		}
	}
	for range 100 {
		if h, _ := tk.Header(); string(h) != "Bearer token-1" {
			t.Fatalf("cached header %q", h)
		}
	}
	if f.n.Load() != 1 {
		t.Fatal("a fresh token was fetched again")
	}
}

func TestTokensRefreshAheadWithoutWaiting(t *testing.T) {
	f := &fakeFetch{life: 400 * time.Millisecond}
	tk := newTokens(f.fetch)
	if h, err := tk.Header(); err != nil || string(h) != "Bearer token-1" {
		t.Fatalf("%q %v", h, err)
	}
	// Past a quarter before expiry (300ms) the old token is still handed
	// out while one background refresh runs.
	time.Sleep(320 * time.Millisecond)
	f.block = make(chan struct{})
	for range 50 {
		if h, err := tk.Header(); err != nil || string(h) != "Bearer token-1" {
			t.Fatalf("during refresh: %q %v", h, err)
		}
	}
	close(f.block)
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if h, _ := tk.Header(); string(h) == "Bearer token-2" {
			if n := f.n.Load(); n != 2 {
				t.Fatalf("%d fetches; want 2 (no racing refreshes)", n)
			}
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the token was not refreshed ahead of expiry")
}

func TestTokensExpiredWaitsAndErrorsHideDetails(t *testing.T) {
	f := &fakeFetch{life: 50 * time.Millisecond}
	tk := newTokens(f.fetch)
	if _, err := tk.Header(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond) // expired unused
	if h, err := tk.Header(); err != nil || string(h) != "Bearer token-2" {
		t.Fatalf("after expiry: %q %v", h, err)
	}
	time.Sleep(60 * time.Millisecond)
	f.fail.Store(true)
	_, err := tk.Header()
	if err == nil || strings.Contains(err.Error(), "leak") || strings.Contains(err.Error(), "invalid_grant") || !errors.Is(err, adapters.ErrCredential) {
		t.Fatalf("error: %v", err)
	}
	// Right after the failure the next call fails without a fetch (the
	// edge fails over); after retryGap it fetches again.
	n := f.n.Load()
	if _, err := tk.Header(); !errors.Is(err, adapters.ErrCredential) || f.n.Load() != n {
		t.Fatalf("fast failure: %v, %d fetches", err, f.n.Load()-n)
	}
	f.fail.Store(false)
	time.Sleep(retryGap + 10*time.Millisecond)
	if h, err := tk.Header(); err != nil || !strings.HasPrefix(string(h), "Bearer token-") {
		t.Fatalf("after the gap: %q %v", h, err)
	}
}

func TestParseDocument(t *testing.T) {
	f := func(doc, project, location string, ok bool) {
		t.Helper()
		d, err := parseDocument(doc)
		if (err == nil) != ok {
			t.Fatalf("%s: err %v", doc, err)
		}
		if ok && (d.Project != project || d.Location != location) {
			t.Fatalf("%s: got %q %q", doc, d.Project, d.Location)
		}
		if err != nil && strings.Contains(err.Error(), "PRIVATE") {
			t.Fatalf("error leaks the document: %v", err)
		}
	}
	f(`{"type":"service_account","project_id":"p1"}`, "p1", DefaultLocation, true)
	f(`{"project_id":"p1","project":"p2","location":"europe-west4"}`, "p2", "europe-west4", true)
	f(`{"location":"global"}`, "", "", false)
	f(`{"private_key":"PRIVATE`, "", "", false)
	f(`{"project":"a/b"}`, "", "", false)
}

func TestBaseURL(t *testing.T) {
	for _, c := range [][3]string{
		{"", "us-central1", "https://us-central1-aiplatform.googleapis.com"},
		{"", "global", "https://aiplatform.googleapis.com"},
		{"", "eu", "https://aiplatform.eu.rep.googleapis.com"},
		{"http://127.0.0.1:9/", "us-central1", "http://127.0.0.1:9"},
	} {
		if got := BaseURL(c[0], c[1]); got != c[2] {
			t.Fatalf("BaseURL(%q, %q) = %q; want %q", c[0], c[1], got, c[2])
		}
	}
}

// BenchmarkTokenHit: the cost of the cached Authorization value.
func BenchmarkTokenHit(b *testing.B) {
	f := &fakeFetch{life: time.Hour}
	tk := newTokens(f.fetch)
	if _, err := tk.Header(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := tk.Header(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
