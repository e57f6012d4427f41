package store

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Store kinds, the values of --store.
const (
	KindEmbedded = "embedded"
	KindEtcd     = "etcd"
	KindMemory   = "memory"
)

// DefaultDataDir is the embedded store's directory unless --data-dir says
// otherwise.
const DefaultDataDir = "./data"

// Config selects and configures a store; each field is one flag of
// `gw serve` (the flag names appear in Open's errors):
//
//	Kind         --store           "embedded" (default when empty), "etcd" or "memory"
//	DataDir      --data-dir        embedded: the directory (default ./data), created 0700;
//	                               one gw process at a time (the directory is locked)
//	Endpoints    --etcd-endpoints  etcd: http://host:port or https://host:port, one or more
//	                               (a comma-separated flag value is split by the caller or by
//	                               Open: an element containing commas is split too)
//	Prefix       --etcd-prefix     etcd: where the keys live (default /gw; must start with /)
//	DialTimeout  (no flag)         etcd: how long Open waits for etcd to answer (default 5s)
//	History      (no flag)         embedded, memory: changes kept for Watch from an older
//	                               revision (default DefaultHistory)
//
// Fields that do not apply to the chosen kind are ignored: DataDir with
// etcd is not an error, so one set of defaults serves every kind.
type Config struct {
	Kind        string
	DataDir     string
	Endpoints   []string
	Prefix      string
	DialTimeout time.Duration
	History     int
}

// Open opens the store cfg describes. For etcd it returns only once etcd
// has answered (within DialTimeout), so a wrong endpoint fails at startup.
func Open(ctx context.Context, cfg Config) (Store, error) {
	switch cfg.Kind {
	case "", KindEmbedded:
		dir := cfg.DataDir
		if dir == "" {
			dir = DefaultDataDir
		}
		return OpenEmbedded(dir, cfg.History)
	case KindMemory:
		return NewMemory(cfg.History), nil
	case KindEtcd:
		eps, err := ParseEndpoints(cfg.Endpoints)
		if err != nil {
			return nil, err
		}
		return OpenEtcd(ctx, eps, cfg.Prefix, cfg.DialTimeout)
	default:
		return nil, fmt.Errorf("cannot open the store: unknown --store %q (want embedded, etcd or memory)", cfg.Kind)
	}
}

// ParseEndpoints checks --etcd-endpoints: each element may itself be a
// comma-separated list; every endpoint is http(s)://host:port or
// host:port (plain http).
func ParseEndpoints(in []string) ([]string, error) {
	var out []string
	for _, e := range in {
		for _, ep := range strings.Split(e, ",") {
			ep = strings.TrimSpace(ep)
			if ep == "" {
				continue
			}
			if err := checkEndpoint(ep); err != nil {
				return nil, err
			}
			out = append(out, ep)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("cannot open the etcd store: --etcd-endpoints is empty (want e.g. http://127.0.0.1:2379)")
	}
	return out, nil
}

func checkEndpoint(ep string) error {
	hostport := ep
	if strings.Contains(ep, "://") {
		u, err := url.Parse(ep)
		if err != nil {
			return fmt.Errorf("cannot use etcd endpoint %q (--etcd-endpoints): %w", ep, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Errorf("cannot use etcd endpoint %q (--etcd-endpoints): scheme %q, want http or https", ep, u.Scheme)
		}
		if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.User != nil {
			return fmt.Errorf("cannot use etcd endpoint %q (--etcd-endpoints): want scheme://host:port only (no path, query or credentials)", ep)
		}
		hostport = u.Host
	}
	if i := strings.LastIndexByte(hostport, ':'); i <= 0 || i == len(hostport)-1 {
		return fmt.Errorf("cannot use etcd endpoint %q (--etcd-endpoints): want host:port, e.g. http://127.0.0.1:2379", ep)
	}
	return nil
}
