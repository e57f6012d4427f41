package limitcount

import (
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"

	"gw/limiter"
)

// clients shares one Redis-backed Limiter (one rueidis client, one
// circuit) among every limit-count configuration with the same connection
// settings, across routes and snapshots. Each compiled plugin holds a
// reference; when the last plugin using a connection is garbage collected
// (its snapshot replaced and no request left on it) the Limiter is closed.
// The Go runtime collects at least every two minutes, so an unused
// connection closes within minutes of the configuration change.
type clients struct {
	mu sync.Mutex
	m  map[string]*client
}

type client struct {
	lim  *limiter.Limiter
	refs int
}

func newClients() *clients { return &clients{m: map[string]*client{}} }

// connKey identifies a connection; the password is hashed so the key can
// never show it.
func connKey(rc *limiter.RedisConfig) string {
	tlsMode := "plain"
	if rc.TLS != nil {
		tlsMode = "tls-verify"
		if rc.TLS.InsecureSkipVerify {
			tlsMode = "tls-noverify"
		}
	}
	return strings.Join([]string{rc.Name, rc.Addr, strings.Join(rc.ClusterNodes, ","), strconv.Itoa(rc.DB), rc.Username,
		strconv.FormatUint(xxhash.Sum64String(rc.Password), 16), rc.Timeout.String(), tlsMode}, "\x00")
}

// acquire returns the Limiter of rc's connection, dialling it the first
// time, and ties a reference to owner's lifetime.
func (cs *clients) acquire(owner *limitCount, rc limiter.RedisConfig, log *slog.Logger) *limiter.Limiter {
	key := connKey(&rc)
	cs.mu.Lock()
	c := cs.m[key]
	if c == nil {
		cfg := limiter.Config{Redis: &rc}
		if log != nil {
			cfg.Logger = log
		}
		c = &client{lim: limiter.New(cfg)}
		cs.m[key] = c
	}
	c.refs++
	cs.mu.Unlock()
	runtime.AddCleanup(owner, cs.release, key)
	return c.lim
}

func (cs *clients) release(key string) {
	cs.mu.Lock()
	c := cs.m[key]
	if c == nil {
		cs.mu.Unlock()
		return
	}
	c.refs--
	if c.refs > 0 {
		cs.mu.Unlock()
		return
	}
	delete(cs.m, key)
	cs.mu.Unlock()
	// Cleanups share one goroutine; closing waits for the limiter's loop.
	go c.lim.Close()
}

// Close closes every connection (gateway shutdown).
func (cs *clients) Close() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for k, c := range cs.m {
		c.lim.Close()
		delete(cs.m, k)
	}
}

// open returns the number of open connections (tests).
func (cs *clients) open() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.m)
}
