package embed

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"gw/admin/snapshot"
)

// MaxBatch is the largest number of texts one embeddings request carries
// when example vectors are computed (OpenAI accepts 2,048 inputs).
const MaxBatch = 256

// Cache keeps example vectors across snapshots, keyed by the embedding
// model's identity (alias, upstream model, provider key, api_base,
// dimensions) and the text, so a reload embeds only examples it has not
// seen. Loads are serialised by the caller (admin.Manager applies one file
// at a time): a Session collects what one load uses and Commit keeps
// exactly that, so the cache never holds more than the live config needs.
type Cache struct {
	mu  sync.Mutex
	cur map[string][]float32
	// Calls and Texts count the embeddings requests made and the texts they
	// carried (tests and /metrics).
	Calls, Texts atomic.Int64
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{cur: map[string][]float32{}} }

// Session is one load's use of the cache.
type Session struct {
	c    *Cache
	used map[string][]float32
}

// Session starts a load.
func (c *Cache) Session() *Session {
	return &Session{c: c, used: map[string][]float32{}}
}

// Commit makes s's vectors the cache's content (call after the load
// succeeded; a failed load leaves the cache as it was).
func (c *Cache) Commit(s *Session) {
	c.mu.Lock()
	c.cur = s.used
	c.mu.Unlock()
}

// Len is the number of cached vectors.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cur)
}

// modelKey names everything about an embedding model that changes its
// vectors.
func modelKey(p *snapshot.Plan) string {
	k := p.Alias + "\x00" + p.UpstreamModel + "\x00" + strconv.FormatInt(p.Model.Embedding.Dimensions, 10)
	if up := p.Upstream; up != nil && up.Key != nil {
		k += "\x00" + up.Key.ID + "\x00" + up.Key.APIBase
	}
	return k + "\x00"
}

// Vectors returns a unit vector per text, embedded with model p: cached
// ones as they are, the others in batches of at most MaxBatch per request
// (each request bounded by timeout, 0: the model's own). The returned
// slices must not be modified.
func (s *Session) Vectors(ctx context.Context, p *snapshot.Plan, texts []string, timeout time.Duration) ([][]float32, error) {
	if p.Model.Embedding == nil {
		return nil, ErrNotEmbedding
	}
	mk := modelKey(p)
	out := make([][]float32, len(texts))
	var missing []int
	s.c.mu.Lock()
	for i, t := range texts {
		k := mk + t
		if v, ok := s.used[k]; ok {
			out[i] = v
		} else if v, ok := s.c.cur[k]; ok {
			out[i] = v
			s.used[k] = v
		} else {
			missing = append(missing, i)
		}
	}
	s.c.mu.Unlock()
	// The same new text twice in one load is embedded once.
	uniq := missing[:0:0]
	first := map[string]bool{}
	for _, i := range missing {
		if !first[texts[i]] {
			first[texts[i]] = true
			uniq = append(uniq, i)
		}
	}
	var r Result
	batch := make([][]byte, 0, min(len(uniq), MaxBatch))
	for lo := 0; lo < len(uniq); lo += MaxBatch {
		part := uniq[lo:min(lo+MaxBatch, len(uniq))]
		batch = batch[:0]
		for _, i := range part {
			batch = append(batch, []byte(texts[i]))
		}
		s.c.Calls.Add(1)
		s.c.Texts.Add(int64(len(batch)))
		if err := Embed(ctx, p, batch, timeout, &r); err != nil {
			return nil, err
		}
		for j, i := range part {
			v := append([]float32(nil), r.Vec(j)...)
			s.used[mk+texts[i]] = v
		}
	}
	for _, i := range missing {
		out[i] = s.used[mk+texts[i]]
	}
	return out, nil
}
