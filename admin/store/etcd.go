package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Etcd is the Store of a gw cluster: etcd v3 through the official client.
// Keys live under a prefix (/gw by default), revisions are etcd's
// (ModRev is mod_revision, CreateRev create_revision), a TTL is an etcd
// lease of its own (whole seconds, rounded up), and Watch is an etcd watch,
// so every gw on one etcd sees every change. When etcd goes away the client
// reconnects by itself and a Watch resumes after the last revision it
// delivered: no change is lost or repeated.
type Etcd struct {
	cli    *clientv3.Client
	prefix string // without a trailing slash; keys start with one
	closed atomic.Bool

	leaseMu sync.Mutex
	leases  map[clientv3.LeaseID]time.Time // expiry of leases seen, so reads need no TimeToLive call
}

var (
	_ Store     = (*Etcd)(nil)
	_ Compacter = (*Etcd)(nil)
)

// DefaultEtcdPrefix is where keys live in etcd unless --etcd-prefix says
// otherwise.
const DefaultEtcdPrefix = "/gw"

// OpenEtcd connects to etcd and checks that it answers within dialTimeout
// (0: 5 s). Errors name the flags: --etcd-endpoints, --etcd-prefix.
func OpenEtcd(ctx context.Context, endpoints []string, prefix string, dialTimeout time.Duration) (*Etcd, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("cannot open the etcd store: no --etcd-endpoints")
	}
	prefix, err := normalizePrefix(prefix)
	if err != nil {
		return nil, err
	}
	if dialTimeout <= 0 {
		dialTimeout = 5 * time.Second
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          dialTimeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
		Logger:               zap.NewNop(),
		Context:              context.Background(),
	})
	if err != nil {
		return nil, fmt.Errorf("cannot connect to etcd at %s (--etcd-endpoints): %w", strings.Join(endpoints, ","), err)
	}
	// clientv3 dials lazily: one read proves etcd answers (and that the
	// prefix is readable) before gw starts serving from it.
	cctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	if _, err := cli.Get(cctx, prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("cannot reach etcd at %s within %s (--etcd-endpoints): %w", strings.Join(endpoints, ","), dialTimeout, err)
	}
	return &Etcd{cli: cli, prefix: prefix, leases: make(map[clientv3.LeaseID]time.Time)}, nil
}

// normalizePrefix accepts "/gw", "/gw/" or "/" (the root).
func normalizePrefix(p string) (string, error) {
	if p == "" {
		p = DefaultEtcdPrefix
	}
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("cannot use etcd prefix %q (--etcd-prefix): it must start with /", p)
	}
	if strings.ContainsAny(p, "\x00") {
		return "", fmt.Errorf("cannot use etcd prefix %q (--etcd-prefix): it contains a NUL byte", p)
	}
	return strings.TrimRight(p, "/"), nil
}

// Prefix is where the keys live in etcd.
func (s *Etcd) Prefix() string { return s.prefix }

// Client is the underlying etcd client (tests, diagnostics).
func (s *Etcd) Client() *clientv3.Client { return s.cli }

func (s *Etcd) Get(ctx context.Context, key string) (KV, error) {
	if s.closed.Load() {
		return KV{}, ErrClosed
	}
	resp, err := s.cli.Get(ctx, s.prefix+key)
	if err != nil {
		return KV{}, s.wrap("get "+key, err)
	}
	if len(resp.Kvs) == 0 {
		return KV{}, ErrNotFound
	}
	return s.kv(ctx, resp.Kvs[0]), nil
}

func (s *Etcd) Put(ctx context.Context, key string, value []byte, opts PutOptions) (KV, error) {
	if s.closed.Load() {
		return KV{}, ErrClosed
	}
	if err := checkPut(key, opts); err != nil {
		return KV{}, err
	}
	full := s.prefix + key
	putOpts := []clientv3.OpOption{clientv3.WithPrevKV()}
	var (
		id      clientv3.LeaseID
		expires time.Time
	)
	if opts.TTL > 0 {
		secs := int64((opts.TTL + time.Second - 1) / time.Second)
		g, err := s.cli.Grant(ctx, secs)
		if err != nil {
			return KV{}, s.wrap("grant a lease for "+key, err)
		}
		id = g.ID
		expires = time.Now().Add(time.Duration(g.TTL) * time.Second)
		s.rememberLease(id, expires)
		putOpts = append(putOpts, clientv3.WithLease(id))
	}
	var cmps []clientv3.Cmp
	switch {
	case opts.PrevRev == MustNotExist:
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(full), "=", 0))
	case opts.PrevRev > 0:
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(full), "=", opts.PrevRev))
	}
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(clientv3.OpPut(full, string(value), putOpts...)).Commit()
	if err != nil || !resp.Succeeded {
		if id != 0 {
			s.revoke(id)
		}
		if err != nil {
			return KV{}, s.wrap("put "+key, err)
		}
		return KV{}, ErrConflict
	}
	kv := KV{Key: key, Value: append([]byte{}, value...), CreateRev: resp.Header.Revision, ModRev: resp.Header.Revision, Expires: expires}
	if pr := resp.Responses[0].GetResponsePut(); pr != nil && pr.PrevKv != nil {
		kv.CreateRev = pr.PrevKv.CreateRevision
		// The replaced value's lease has no key left; end it now rather
		// than leave it to expire.
		if old := clientv3.LeaseID(pr.PrevKv.Lease); old != 0 && old != id {
			s.revoke(old)
		}
	}
	return kv, nil
}

func (s *Etcd) Delete(ctx context.Context, key string, prevRev int64) error {
	if s.closed.Load() {
		return ErrClosed
	}
	full := s.prefix + key
	if prevRev <= 0 {
		resp, err := s.cli.Delete(ctx, full)
		if err != nil {
			return s.wrap("delete "+key, err)
		}
		if resp.Deleted == 0 {
			return ErrNotFound
		}
		return nil
	}
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(full), "=", prevRev)).
		Then(clientv3.OpDelete(full)).
		Else(clientv3.OpGet(full, clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return s.wrap("delete "+key, err)
	}
	if !resp.Succeeded {
		if r := resp.Responses[0].GetResponseRange(); r != nil && r.Count == 0 {
			return ErrNotFound
		}
		return ErrConflict
	}
	return nil
}

func (s *Etcd) List(ctx context.Context, prefix string) ([]KV, int64, error) {
	if s.closed.Load() {
		return nil, 0, ErrClosed
	}
	resp, err := s.cli.Get(ctx, s.rangeKey(prefix), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, 0, s.wrap("list "+prefix, err)
	}
	kvs := make([]KV, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		kvs[i] = s.kv(ctx, kv)
	}
	return kvs, resp.Header.Revision, nil
}

// rangeKey is the etcd prefix of a List or Watch: "" means every key of
// the store, which all start with "/" (so "/gw" never matches "/gw2/...").
func (s *Etcd) rangeKey(prefix string) string {
	if prefix == "" {
		return s.prefix + "/"
	}
	return s.prefix + prefix
}

func (s *Etcd) Watch(ctx context.Context, prefix string, fromRev int64) <-chan WatchResponse {
	out := make(chan WatchResponse, 1)
	if s.closed.Load() {
		out <- WatchResponse{Err: ErrClosed}
		close(out)
		return out
	}
	if fromRev <= 0 {
		// "From now" is the revision when Watch is called, not when etcd
		// creates the watch a moment later: a write between the two must
		// not be lost. Without an answer, etcd's "now" is the best left.
		if resp, err := s.cli.Get(ctx, s.prefix+"/", clientv3.WithCountOnly(), clientv3.WithLimit(1)); err == nil {
			fromRev = resp.Header.Revision + 1
		}
	}
	go s.watch(ctx, out, prefix, fromRev)
	return out
}

func (s *Etcd) watch(ctx context.Context, out chan<- WatchResponse, prefix string, fromRev int64) {
	defer close(out)
	send := func(r WatchResponse) bool {
		select {
		case out <- r:
			return true
		case <-ctx.Done():
			return false
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts := []clientv3.OpOption{clientv3.WithPrefix()}
	if fromRev > 0 {
		opts = append(opts, clientv3.WithRev(fromRev))
	}
	for resp := range s.cli.Watch(wctx, s.rangeKey(prefix), opts...) {
		if resp.CompactRevision != 0 || errors.Is(resp.Err(), rpctypes.ErrCompacted) {
			send(WatchResponse{Err: fmt.Errorf("cannot watch %q from revision %d: etcd compacted up to %d: %w", prefix, fromRev, resp.CompactRevision, ErrCompacted)})
			return
		}
		if err := resp.Err(); err != nil {
			if ctx.Err() == nil {
				send(WatchResponse{Err: s.wrap("watch "+prefix, err)})
			}
			return
		}
		if len(resp.Events) == 0 {
			continue
		}
		evs := make([]Event, len(resp.Events))
		for i, e := range resp.Events {
			if e.Type == mvccpb.DELETE {
				evs[i] = Event{Type: EventDelete, KV: KV{Key: s.strip(e.Kv.Key), ModRev: e.Kv.ModRevision}}
				continue
			}
			evs[i] = Event{Type: EventPut, KV: s.kv(ctx, e.Kv)}
		}
		if !send(WatchResponse{Events: evs}) {
			return
		}
	}
	// The client closes the channel when ctx ends or the client closes.
	if ctx.Err() == nil && s.closed.Load() {
		send(WatchResponse{Err: ErrClosed})
	}
}

// Compact discards etcd's history before rev (for the whole etcd, not only
// the prefix: that is how etcd compacts).
func (s *Etcd) Compact(ctx context.Context, rev int64) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if _, err := s.cli.Compact(ctx, rev); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return s.wrap(fmt.Sprintf("compact at revision %d", rev), err)
	}
	return nil
}

func (s *Etcd) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if err := s.cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("cannot close the etcd client: %w", err)
	}
	return nil
}

func (s *Etcd) wrap(what string, err error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return fmt.Errorf("cannot %s in etcd: %w", what, err)
}

func (s *Etcd) strip(key []byte) string {
	return strings.TrimPrefix(string(key), s.prefix)
}

func (s *Etcd) kv(ctx context.Context, kv *mvccpb.KeyValue) KV {
	out := KV{Key: s.strip(kv.Key), Value: kv.Value, CreateRev: kv.CreateRevision, ModRev: kv.ModRevision}
	if out.Value == nil {
		out.Value = []byte{}
	}
	if kv.Lease != 0 {
		out.Expires = s.leaseExpiry(ctx, clientv3.LeaseID(kv.Lease))
	}
	return out
}

// leaseExpiry is when a lease ends: remembered when this process granted
// it, asked of etcd once otherwise (a key written by another gw). Zero
// when etcd cannot say; the key still expires in etcd.
func (s *Etcd) leaseExpiry(ctx context.Context, id clientv3.LeaseID) time.Time {
	s.leaseMu.Lock()
	at, ok := s.leases[id]
	s.leaseMu.Unlock()
	if ok {
		return at
	}
	resp, err := s.cli.TimeToLive(ctx, id)
	if err != nil || resp.TTL < 0 {
		return time.Time{}
	}
	at = time.Now().Add(time.Duration(resp.TTL) * time.Second)
	s.rememberLease(id, at)
	return at
}

func (s *Etcd) rememberLease(id clientv3.LeaseID, at time.Time) {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	if len(s.leases) >= 4096 {
		now := time.Now()
		for k, v := range s.leases {
			if v.Before(now) {
				delete(s.leases, k)
			}
		}
	}
	s.leases[id] = at
}

// revoke ends a lease this store no longer needs; failure only means etcd
// removes it at its expiry instead.
func (s *Etcd) revoke(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = s.cli.Revoke(ctx, id)
	s.leaseMu.Lock()
	delete(s.leases, id)
	s.leaseMu.Unlock()
}
