package cache

// The LRU both memory stores (Memory, SemMemory) keep per shard: an
// intrusive doubly linked list of stored entries, most recently used at
// the head, and the bytes they are charged. Intrusive, so touching an
// entry on a hit moves two pointers and allocates nothing; the stores
// differ only in how an evicted entry leaves their index (a map, or a
// scope's vector set), which stays theirs.

import "time"

// stored is what both stores keep of an entry: its copy of the response,
// when it expires, what it is charged, and its place in the LRU.
type stored[E any] struct {
	e          Entry
	expires    int64 // unix ns
	size       int64
	prev, next *E
}

// lruEntry is an entry type of a store: a pointer to it reaches its
// stored part.
type lruEntry[E any] interface {
	*E
	lru() *stored[E]
}

// lruList is one shard's list. The zero value is empty. Not safe for
// concurrent use; the shard's mutex guards it.
type lruList[E any, P lruEntry[E]] struct {
	head, tail *E // head: most recently used
	bytes      int64
}

// add puts e at the head and charges its size.
func (l *lruList[E, P]) add(e *E) {
	l.pushFront(e)
	l.bytes += P(e).lru().size
}

// drop unlinks e and stops charging it.
func (l *lruList[E, P]) drop(e *E) {
	l.unlink(e)
	l.bytes -= P(e).lru().size
}

// touch makes e the most recently used.
func (l *lruList[E, P]) touch(e *E) {
	if l.head != e {
		l.unlink(e)
		l.pushFront(e)
	}
}

// over returns the least recently used entry while the list is charged
// more than limit (the store evicts it, and asks again), else nil.
func (l *lruList[E, P]) over(limit int64) *E {
	if l.bytes > limit {
		return l.tail
	}
	return nil
}

func (l *lruList[E, P]) unlink(e *E) {
	s := P(e).lru()
	if s.prev != nil {
		P(s.prev).lru().next = s.next
	} else {
		l.head = s.next
	}
	if s.next != nil {
		P(s.next).lru().prev = s.prev
	} else {
		l.tail = s.prev
	}
	s.prev, s.next = nil, nil
}

func (l *lruList[E, P]) pushFront(e *E) {
	s := P(e).lru()
	s.next = l.head
	if l.head != nil {
		P(l.head).lru().prev = e
	}
	l.head = e
	if l.tail == nil {
		l.tail = e
	}
}

// newStored copies e (one allocation holds the content type and the body)
// to keep for ttl from now, charged size.
func newStored[E any](e Entry, now int64, ttl time.Duration, size int64) stored[E] {
	buf := make([]byte, len(e.ContentType)+len(e.Body))
	n := copy(buf, e.ContentType)
	copy(buf[n:], e.Body)
	return stored[E]{e: Entry{StatusCode: e.StatusCode, ContentType: buf[:n:n], Body: buf[n:]},
		expires: now + int64(ttl), size: size}
}
