package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The embedded store's files in the data directory.
const (
	embeddedDBFile   = "gw.db"
	embeddedLockFile = "LOCK"
)

var (
	bucketMeta = []byte("meta")
	bucketKV   = []byte("kv")
	keyRev     = []byte("rev")
	keyFormat  = []byte("format")
	formatV1   = []byte("1")
)

// A record in the kv bucket: createRev, modRev, expiry (Unix nanoseconds,
// 0: none), each 8 bytes big-endian, then the value.
const recordHeader = 24

// Embedded is the default single-node Store: a bbolt file in the data
// directory. Keys, revisions and TTL leases survive a restart (a key whose
// TTL passed while gw was down is removed when the store opens, at a new
// revision). The watch history is kept in memory, bounded; a Watch from a
// revision before the last open is ErrCompacted, so the caller lists again.
// One process at a time may open a directory.
type Embedded struct {
	dir  string
	db   *bolt.DB
	lock *os.File

	closeMu sync.RWMutex // held shared by every operation, exclusively by Close
	closed  bool

	// Writes go to one committer goroutine, which applies every write
	// waiting at that moment in one transaction: one fsync for many
	// concurrent writers, and revision order is commit order.
	writes    chan *write
	committed chan struct{} // closed when the committer has stopped
	rev       int64         // the last committed revision; the committer's alone after Open

	hub *hub
	exp *expirer
	// expMu makes popping due leases and committing their deletes one
	// step: without it a reader could find a lease already popped by the
	// expiry goroutine but not yet deleted, and serve a key past its TTL
	// (Open's own sweep saw nothing due and returned while the delete
	// was still in flight).
	expMu sync.Mutex
}

// write is one mutation for the committer. apply runs inside the batch
// transaction with the last revision assigned so far; it returns the
// events it produced (each at the next revision). A result error that is
// ErrConflict or ErrNotFound is the write's own outcome; any other error
// aborts the transaction.
type write struct {
	apply func(tx *bolt.Tx, rev int64) ([]Event, error)
	evs   []Event
	err   error
	done  chan struct{}
}

// maxWriteBatch bounds one transaction.
const maxWriteBatch = 256

var (
	_ Store     = (*Embedded)(nil)
	_ Compacter = (*Embedded)(nil)
)

// OpenEmbedded opens (creating when needed) the store in dir and keeps the
// last history changes for Watch (0: DefaultHistory). Errors name
// --data-dir, the flag that sets dir.
func OpenEmbedded(dir string, history int) (*Embedded, error) {
	if dir == "" {
		return nil, errors.New("cannot open the embedded store: empty --data-dir")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the data directory %q (--data-dir): %w", dir, err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	db, err := bolt.Open(filepath.Join(dir, embeddedDBFile), 0o600, &bolt.Options{
		Timeout: time.Second,
		// As etcd opens its own bbolt: the freelist is rebuilt at open
		// instead of written with every commit. A write's cost is still
		// bbolt's two fsyncs (data, then meta page); group commit shares
		// them between concurrent writers.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if err != nil {
		unlockDir(lock)
		return nil, fmt.Errorf("cannot open the store file in %q (--data-dir): %w", dir, err)
	}
	s := &Embedded{dir: dir, db: db, lock: lock}
	var leases []lease
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if f := meta.Get(keyFormat); f == nil {
			if err := meta.Put(keyFormat, formatV1); err != nil {
				return err
			}
		} else if !bytes.Equal(f, formatV1) {
			return fmt.Errorf("unknown store format %q (written by a newer gw?)", f)
		}
		if r := meta.Get(keyRev); r != nil {
			if len(r) != 8 {
				return fmt.Errorf("corrupt revision record (%d bytes)", len(r))
			}
			s.rev = int64(binary.BigEndian.Uint64(r))
		}
		kvb, err := tx.CreateBucketIfNotExists(bucketKV)
		if err != nil {
			return err
		}
		stored := s.rev
		err = kvb.ForEach(func(k, v []byte) error {
			if len(v) < recordHeader {
				return fmt.Errorf("corrupt record for key %q (%d bytes)", k, len(v))
			}
			mod := int64(binary.BigEndian.Uint64(v[8:16]))
			// The revision never goes back below a stored key's, even if
			// the revision record was lost.
			s.rev = max(s.rev, mod)
			if exp := int64(binary.BigEndian.Uint64(v[16:24])); exp != 0 {
				leases = append(leases, lease{at: time.Unix(0, exp), key: string(k), modRev: mod})
			}
			return nil
		})
		if err != nil || s.rev == stored {
			return err
		}
		return putRev(tx, s.rev)
	})
	if err != nil {
		_ = db.Close()
		unlockDir(lock)
		return nil, fmt.Errorf("cannot read the store in %q (--data-dir): %w", dir, err)
	}
	s.hub = newHub(s.rev, history)
	s.writes = make(chan *write)
	s.committed = make(chan struct{})
	go s.commitLoop()
	s.exp = newExpirer(s.expire)
	for _, l := range leases {
		s.exp.add(l)
	}
	// Leases that ran out while gw was down go now, before the first read.
	s.expire(time.Now())
	return s, nil
}

// lockDir takes an exclusive advisory lock on dir/LOCK, released by the
// kernel when the process exits, so a crash never leaves a stale lock.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, embeddedLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot create the lock file %q (--data-dir): %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := ""
		if b, rerr := os.ReadFile(path); rerr == nil && len(bytes.TrimSpace(b)) > 0 {
			holder = " (pid " + string(bytes.TrimSpace(b)) + ")"
		}
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("cannot open the store in %q (--data-dir): the directory is in use by another gw process%s; give each gw its own --data-dir, or share resources through --store etcd", dir, holder)
		}
		return nil, fmt.Errorf("cannot lock %q (--data-dir): %w", path, err)
	}
	// The holder's pid helps whoever hits the error above; best effort.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

func unlockDir(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	_ = f.Close()
}

func (s *Embedded) Get(ctx context.Context, key string) (KV, error) {
	if err := ctx.Err(); err != nil {
		return KV{}, err
	}
	s.expireIfDue()
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return KV{}, ErrClosed
	}
	var kv KV
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketKV).Get([]byte(key))
		if v == nil {
			return ErrNotFound
		}
		var err error
		kv, err = decodeRecord(key, v)
		return err
	})
	if err != nil {
		return KV{}, err
	}
	return kv, nil
}

func (s *Embedded) List(ctx context.Context, prefix string) ([]KV, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	s.expireIfDue()
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return nil, 0, ErrClosed
	}
	var (
		kvs []KV
		rev int64
	)
	err := s.db.View(func(tx *bolt.Tx) error {
		if r := tx.Bucket(bucketMeta).Get(keyRev); r != nil {
			rev = int64(binary.BigEndian.Uint64(r))
		}
		c := tx.Bucket(bucketKV).Cursor()
		p := []byte(prefix)
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			kv, err := decodeRecord(string(k), v)
			if err != nil {
				return err
			}
			kvs = append(kvs, kv)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("cannot list %q: %w", prefix, err)
	}
	return kvs, rev, nil
}

func (s *Embedded) Put(ctx context.Context, key string, value []byte, opts PutOptions) (KV, error) {
	if err := ctx.Err(); err != nil {
		return KV{}, err
	}
	if err := checkPut(key, opts); err != nil {
		return KV{}, err
	}
	if len(key) > bolt.MaxKeySize {
		return KV{}, fmt.Errorf("cannot put a key of %d bytes: the embedded store takes at most %d", len(key), bolt.MaxKeySize)
	}
	var expires time.Time
	if opts.TTL > 0 {
		expires = time.Now().Add(opts.TTL)
	}
	value = append([]byte{}, value...)
	evs, err := s.do(func(tx *bolt.Tx, rev int64) ([]Event, error) {
		b := tx.Bucket(bucketKV)
		kv := KV{Key: key, Value: value, CreateRev: rev + 1, ModRev: rev + 1, Expires: expires}
		old := b.Get([]byte(key))
		var oldMod int64
		if old != nil {
			if len(old) < recordHeader {
				return nil, fmt.Errorf("corrupt record for key %q", key)
			}
			kv.CreateRev = int64(binary.BigEndian.Uint64(old[0:8]))
			oldMod = int64(binary.BigEndian.Uint64(old[8:16]))
		}
		if err := checkPrev(old != nil, oldMod, opts.PrevRev); err != nil {
			return nil, err
		}
		if err := b.Put([]byte(key), encodeRecord(kv)); err != nil {
			return nil, err
		}
		return []Event{{Type: EventPut, KV: kv}}, nil
	})
	if err != nil {
		if errors.Is(err, ErrConflict) || errors.Is(err, ErrClosed) {
			return KV{}, err
		}
		return KV{}, fmt.Errorf("cannot put %q: %w", key, err)
	}
	kv := evs[0].KV
	if opts.TTL > 0 {
		s.exp.add(lease{at: kv.Expires, key: key, modRev: kv.ModRev})
	}
	return cloneKV(kv), nil
}

func (s *Embedded) Delete(ctx context.Context, key string, prevRev int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := s.do(func(tx *bolt.Tx, rev int64) ([]Event, error) {
		b := tx.Bucket(bucketKV)
		old := b.Get([]byte(key))
		if old == nil {
			return nil, ErrNotFound
		}
		if prevRev > 0 && (len(old) < recordHeader || int64(binary.BigEndian.Uint64(old[8:16])) != prevRev) {
			return nil, ErrConflict
		}
		if err := b.Delete([]byte(key)); err != nil {
			return nil, err
		}
		return []Event{{Type: EventDelete, KV: KV{Key: key, ModRev: rev + 1}}}, nil
	})
	if err != nil {
		if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrClosed) {
			return err
		}
		return fmt.Errorf("cannot delete %q: %w", key, err)
	}
	return nil
}

// do runs one write through the committer and waits for its commit. The
// write is not cancelled by ctx once handed over: it may already be in a
// committed transaction.
func (s *Embedded) do(apply func(tx *bolt.Tx, rev int64) ([]Event, error)) ([]Event, error) {
	s.expireIfDue()
	return s.submit(apply)
}

func (s *Embedded) submit(apply func(tx *bolt.Tx, rev int64) ([]Event, error)) ([]Event, error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	w := &write{apply: apply, done: make(chan struct{})}
	s.writes <- w
	<-w.done
	return w.evs, w.err
}

func ownOutcome(err error) bool {
	return errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound)
}

// commitLoop is the committer: it takes every write waiting, applies them
// in one transaction, and after the commit publishes their events in
// revision order and releases the writers. If the transaction fails, each
// write is tried alone so one bad write does not fail the others.
func (s *Embedded) commitLoop() {
	defer close(s.committed)
	batch := make([]*write, 0, maxWriteBatch)
	for w := range s.writes {
		batch = append(batch[:0], w)
	more:
		for len(batch) < maxWriteBatch {
			select {
			case w, ok := <-s.writes:
				if !ok {
					break more
				}
				batch = append(batch, w)
			default:
				break more
			}
		}
		if err := s.commit(batch); err != nil && len(batch) > 1 {
			for _, w := range batch {
				_ = s.commit([]*write{w})
			}
		} else if err != nil {
			batch[0].err = err
		}
		for _, w := range batch {
			close(w.done)
		}
	}
}

// commit applies batch in one transaction. On success every write has its
// outcome and the events are published; on failure nothing changed.
func (s *Embedded) commit(batch []*write) error {
	rev := s.rev
	err := s.db.Update(func(tx *bolt.Tx) error {
		rev = s.rev
		for _, w := range batch {
			w.evs, w.err = w.apply(tx, rev)
			if w.err != nil && !ownOutcome(w.err) {
				return w.err
			}
			rev += int64(len(w.evs))
		}
		if rev == s.rev {
			return nil
		}
		return putRev(tx, rev)
	})
	if err != nil {
		for _, w := range batch {
			w.evs, w.err = nil, err
		}
		return err
	}
	s.rev = rev
	for _, w := range batch {
		for _, ev := range w.evs {
			s.hub.publish(ev)
		}
	}
	return nil
}

func (s *Embedded) Watch(ctx context.Context, prefix string, fromRev int64) <-chan WatchResponse {
	return s.hub.watch(ctx, prefix, fromRev)
}

// Compact discards the in-memory watch history before rev.
func (s *Embedded) Compact(ctx context.Context, rev int64) error {
	return s.hub.compact(rev)
}

// Close waits for running operations, ends every Watch with ErrClosed and
// releases the directory.
func (s *Embedded) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return nil
	}
	s.closed = true
	s.closeMu.Unlock()
	s.exp.stop()
	// No write is in flight (each holds closeMu shared) and none can start.
	close(s.writes)
	<-s.committed
	s.hub.close()
	err := s.db.Close()
	unlockDir(s.lock)
	if err != nil {
		return fmt.Errorf("cannot close the store in %q: %w", s.dir, err)
	}
	return nil
}

func (s *Embedded) expireIfDue() {
	s.expMu.Lock()
	defer s.expMu.Unlock()
	if now := time.Now(); s.exp.due(now) {
		s.expireLocked(now)
	}
}

// expire deletes the keys whose lease passed, each at its own revision.
func (s *Embedded) expire(now time.Time) {
	s.expMu.Lock()
	defer s.expMu.Unlock()
	s.expireLocked(now)
}

func (s *Embedded) expireLocked(now time.Time) {
	due := s.exp.popDue(now)
	if len(due) == 0 {
		return
	}
	_, err := s.submit(func(tx *bolt.Tx, rev int64) ([]Event, error) {
		b := tx.Bucket(bucketKV)
		var evs []Event
		for _, l := range due {
			v := b.Get([]byte(l.key))
			if len(v) < recordHeader || int64(binary.BigEndian.Uint64(v[8:16])) != l.modRev {
				continue // replaced or deleted since
			}
			if err := b.Delete([]byte(l.key)); err != nil {
				return nil, err
			}
			evs = append(evs, Event{Type: EventDelete, KV: KV{Key: l.key, ModRev: rev + int64(len(evs)) + 1}})
		}
		return evs, nil
	})
	if err != nil && !errors.Is(err, ErrClosed) {
		// The keys stay until an attempt succeeds; try again in a second.
		for _, l := range due {
			l.at = now.Add(time.Second)
			s.exp.add(l)
		}
	}
}

func putRev(tx *bolt.Tx, rev int64) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(rev))
	return tx.Bucket(bucketMeta).Put(keyRev, b[:])
}

func encodeRecord(kv KV) []byte {
	buf := make([]byte, recordHeader+len(kv.Value))
	binary.BigEndian.PutUint64(buf[0:8], uint64(kv.CreateRev))
	binary.BigEndian.PutUint64(buf[8:16], uint64(kv.ModRev))
	if !kv.Expires.IsZero() {
		binary.BigEndian.PutUint64(buf[16:24], uint64(kv.Expires.UnixNano()))
	}
	copy(buf[recordHeader:], kv.Value)
	return buf
}

// decodeRecord copies v: bbolt's memory is valid only inside the
// transaction.
func decodeRecord(key string, v []byte) (KV, error) {
	if len(v) < recordHeader {
		return KV{}, fmt.Errorf("corrupt record for key %q (%d bytes)", key, len(v))
	}
	kv := KV{
		Key:       key,
		CreateRev: int64(binary.BigEndian.Uint64(v[0:8])),
		ModRev:    int64(binary.BigEndian.Uint64(v[8:16])),
		Value:     append([]byte{}, v[recordHeader:]...),
	}
	if exp := int64(binary.BigEndian.Uint64(v[16:24])); exp != 0 {
		kv.Expires = time.Unix(0, exp)
	}
	return kv, nil
}
