// Package store is the management API's key-value store: one small
// interface with an embedded single-node implementation (the default,
// surviving restarts in --data-dir) and an etcd v3 implementation for
// clusters (several gw processes on one etcd converge through Watch).
//
// Keys are paths such as "/routes/1"; the etcd store keeps them under its
// prefix (--etcd-prefix, default /gw), so "/routes/1" is "/gw/routes/1" in
// etcd. Values are the JSON bodies exactly as stored.
// Revisions are store-wide and strictly increasing: a KV's ModRev is the
// management API's modifiedIndex and CreateRev its createdIndex.
//
// Open(ctx, Config) picks the implementation from the `gw serve` flags:
//
//	--store           Config.Kind       embedded (default) | etcd | memory
//	--data-dir        Config.DataDir    embedded: the directory, default ./data; locked, so a
//	                                    second gw on it fails at startup with a clear error
//	--etcd-endpoints  Config.Endpoints  etcd: http(s)://host:port, comma-separated allowed
//	--etcd-prefix     Config.Prefix     etcd: key prefix, default /gw
//	(no flag)         Config.DialTimeout, Config.History
//
// Memory and Embedded keep the last Config.History changes (DefaultHistory)
// for Watch from an older revision; etcd keeps what its compaction keeps.
// Values in returned KVs and events belong to the caller, except that one
// event's Value is shared by every watcher of the memory and embedded
// stores: do not modify it.
package store

import (
	"context"
	"errors"
	"time"
)

// KV is one stored key.
type KV struct {
	Key       string
	Value     []byte
	CreateRev int64 // revision of the write that created the key
	ModRev    int64 // revision of the last write to the key
	// Expires is when a key written with a TTL is removed (zero: never).
	Expires time.Time
}

// PutOptions are the conditions and lifetime of one write.
type PutOptions struct {
	// PrevRev makes the write conditional: 0 writes unconditionally,
	// MustNotExist (-1) only creates, a positive value only replaces a key
	// whose ModRev is exactly that (ErrConflict otherwise).
	PrevRev int64
	// TTL removes the key after this long (0: never). The removal is a
	// delete seen by Watch like any other.
	TTL time.Duration
}

// MustNotExist as PutOptions.PrevRev: create only.
const MustNotExist = -1

// EventType is what happened to a key.
type EventType uint8

const (
	EventPut EventType = iota + 1
	EventDelete
)

// Event is one change seen by Watch. A delete carries the key and the
// revision of the delete in KV.ModRev, and no value.
type Event struct {
	Type EventType
	KV   KV
}

// WatchResponse is one batch of changes in revision order, or an error
// after which the channel is closed (ErrCompacted: fromRev is no longer
// available; list again and watch from the list's revision).
type WatchResponse struct {
	Events []Event
	Err    error
}

// Store is the management API's storage. Implementations are safe for
// concurrent use.
type Store interface {
	// Get returns the key or ErrNotFound.
	Get(ctx context.Context, key string) (KV, error)
	// Put writes the key and returns it as stored (revisions filled).
	Put(ctx context.Context, key string, value []byte, opts PutOptions) (KV, error)
	// Delete removes the key; prevRev > 0 makes it conditional
	// (ErrConflict). A missing key is ErrNotFound.
	Delete(ctx context.Context, key string, prevRev int64) error
	// List returns every key under prefix in key order and the store
	// revision the listing reflects (watch from rev+1 to see later changes).
	List(ctx context.Context, prefix string) (kvs []KV, rev int64, err error)
	// Watch streams changes under prefix from revision fromRev on (0: from
	// now). The channel is closed when ctx ends or after an error response.
	Watch(ctx context.Context, prefix string, fromRev int64) <-chan WatchResponse
	// Close releases the store.
	Close() error
}

// Compacter is implemented by every store: Compact discards the change
// history before rev, so a Watch from an older revision fails with
// ErrCompacted (etcd's compaction; the embedded and memory stores also
// trim their bounded history on their own).
type Compacter interface {
	Compact(ctx context.Context, rev int64) error
}

// Errors. Compare with errors.Is.
var (
	ErrNotFound  = errors.New("store: key not found")
	ErrConflict  = errors.New("store: revision conflict")
	ErrCompacted = errors.New("store: revision compacted")
	ErrClosed    = errors.New("store: closed")
)
