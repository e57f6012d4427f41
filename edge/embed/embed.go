// Package embed is gw's in-process embedding client: it embeds a batch of
// texts with an embedding model of a snapshot (a direct model with an
// `embedding` block) through that model's compiled provider key — the same
// adapter (adapters.BuildEndpoint) and pooled upstream client as
// /v1/embeddings, so provider auth, api_base, TLS, default headers and the
// model's timeout and retries apply alike — and returns float32 vectors.
//
// Embed serves the request path (one call per request for a semantic
// router, one per guardrail hook); Cache keeps the example vectors of
// semantic routes and guardrails across snapshots, so a reload embeds only
// examples it has not seen.
package embed

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/upstream"
	"gw/admin/snapshot"
	"gw/edge/vecindex"
	"gw/sse/rawjson"
)

// Errors of Embed. Their texts never carry a text being embedded.
var (
	ErrNotEmbedding = errors.New("embed: the model has no embedding block")
	ErrUnavailable  = errors.New("embed: the model's provider key is not compiled in this build")
	ErrTimeout      = errors.New("embed: the embedding call timed out")
)

// Result holds the vectors of one Embed call: vector i is Vecs[i*Dims:
// (i+1)*Dims]. Reuse a Result across calls to reuse its memory.
type Result struct {
	Vecs []float32
	Dims int
	N    int
	// Tokens is the upstream's usage.prompt_tokens (0 when it sent none).
	Tokens int64
	body   []byte
}

// Vec returns vector i.
func (r *Result) Vec(i int) []float32 { return r.Vecs[i*r.Dims : (i+1)*r.Dims] }

// Embed embeds texts (plain UTF-8, not JSON) with embedding model p in one
// upstream request and fills r. Every vector has the model's
// embedding.dimensions and unit length (normalised here when the model
// says embedding.normalize: false). timeout bounds each attempt (0: the
// model's own timeout); ctx's deadline bounds them all. A retryable
// failure (transport, timeout, 5xx, 429) is retried up to the model's
// `retries`.
func Embed(ctx context.Context, p *snapshot.Plan, texts [][]byte, timeout time.Duration, r *Result) error {
	emb := p.Model.Embedding
	if emb == nil {
		return ErrNotEmbedding
	}
	up := p.Upstream
	if up == nil || up.Err != nil || up.Adapter == nil {
		return ErrUnavailable
	}
	r.Dims, r.N, r.Tokens = int(emb.Dimensions), len(texts), 0
	r.body = appendRequest(r.body[:0], p.UpstreamModelJSON, texts)
	in := adapters.ChatInput{Body: r.body, UpstreamModel: p.UpstreamModel, Provider: p.Model.Provider}
	if timeout <= 0 || (p.Timeout > 0 && p.Timeout < timeout) {
		timeout = p.Timeout
	}
	var last error
	for try := 0; try <= p.Retries; try++ {
		t := timeout
		if dl, ok := ctx.Deadline(); ok {
			left := time.Until(dl)
			if left <= 0 {
				return ErrTimeout
			}
			if t <= 0 || left < t {
				t = left
			}
		}
		req := fasthttp.AcquireRequest()
		if err := adapters.BuildEndpoint(up.Adapter, adapters.EndpointEmbeddings, req, &in); err != nil {
			fasthttp.ReleaseRequest(req)
			return errors.New("embed: cannot build the embeddings request for model " + p.Alias + ": " + err.Error())
		}
		resp := fasthttp.AcquireResponse()
		err := up.Client.Do(req, resp, t)
		fasthttp.ReleaseRequest(req)
		status := resp.StatusCode()
		switch {
		case err != nil:
			if upstream.IsTimeout(err) {
				last = ErrTimeout
			} else {
				last = errors.New("embed: cannot reach the upstream of model " + p.Alias)
			}
		case status >= 500 || status == fasthttp.StatusTooManyRequests:
			last = errors.New("embed: the upstream of model " + p.Alias + " answered " + strconv.Itoa(status))
		case status >= 300:
			fasthttp.ReleaseResponse(resp)
			return errors.New("embed: the upstream of model " + p.Alias + " answered " + strconv.Itoa(status))
		default:
			err = r.Parse(resp.Body(), r.N, r.Dims, !emb.Normalize)
			fasthttp.ReleaseResponse(resp)
			if err != nil {
				return errors.New("embed: model " + p.Alias + ": " + err.Error())
			}
			return nil
		}
		fasthttp.ReleaseResponse(resp)
		if ctx.Err() != nil {
			return ErrTimeout
		}
	}
	return last
}

// appendRequest writes {"model":…,"input":[…],"encoding_format":"float"}.
func appendRequest(dst, model []byte, texts [][]byte) []byte {
	dst = append(dst, `{"model":`...)
	dst = append(dst, model...)
	dst = append(dst, `,"input":[`...)
	for i, t := range texts {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = rawjson.AppendQuoteBytes(dst, t)
	}
	return append(dst, `],"encoding_format":"float"}`...)
}

// Parse reads an OpenAI embeddings answer for n inputs of dims numbers each
// into r: data[].index places each vector (position when absent); every
// index 0..n-1 must be present once with exactly dims numbers. normalize
// scales each vector to unit length. The error names the field at fault,
// never a value.
func (r *Result) Parse(body []byte, n, dims int, normalize bool) error {
	r.N, r.Dims, r.Tokens = n, dims, 0
	if !rawjson.Valid(body) {
		return errors.New("the embeddings answer is not JSON")
	}
	data, kind, ok := rawjson.Get(body, "data")
	if !ok || kind != rawjson.Array {
		return errors.New("the embeddings answer has no data array")
	}
	need := r.N * r.Dims
	if cap(r.Vecs) < need {
		r.Vecs = make([]float32, need)
	}
	r.Vecs = r.Vecs[:need]
	var seen [64]uint64 // inputs seen, for batches up to 4096
	var big []bool
	if r.N > len(seen)*64 {
		big = make([]bool, r.N)
	}
	var perr error
	count := 0
	_ = rawjson.ForEachElem(data, func(pos int, el []byte, k rawjson.Kind) bool {
		if k != rawjson.Object {
			perr = errors.New("data[" + strconv.Itoa(pos) + "]: not an object")
			return false
		}
		idx := pos
		if iv, ik, ok := rawjson.Get(el, "index"); ok && ik == rawjson.Number {
			n, ok := rawjson.ParseInt(iv)
			if !ok {
				perr = errors.New("data[" + strconv.Itoa(pos) + "].index: not an integer")
				return false
			}
			idx = int(n)
		}
		if idx < 0 || idx >= r.N {
			perr = errors.New("data[" + strconv.Itoa(pos) + "].index: out of range")
			return false
		}
		if big != nil {
			if big[idx] {
				perr = errors.New("data: index " + strconv.Itoa(idx) + " twice")
				return false
			}
			big[idx] = true
		} else {
			if seen[idx>>6]&(1<<(idx&63)) != 0 {
				perr = errors.New("data: index " + strconv.Itoa(idx) + " twice")
				return false
			}
			seen[idx>>6] |= 1 << (idx & 63)
		}
		vec, vk, ok := rawjson.Get(el, "embedding")
		if !ok || vk != rawjson.Array {
			perr = errors.New("data[" + strconv.Itoa(pos) + "].embedding: not an array of numbers (gw asks for encoding_format float)")
			return false
		}
		dst := r.Vec(idx)
		n := 0
		_ = rawjson.ForEachElem(vec, func(_ int, num []byte, nk rawjson.Kind) bool {
			if nk != rawjson.Number || n >= len(dst) {
				n = -1
				return false
			}
			f, ok := rawjson.ParseFloat(num)
			if !ok {
				n = -1
				return false
			}
			dst[n] = float32(f)
			n++
			return true
		})
		if n != len(dst) {
			perr = errors.New("data[" + strconv.Itoa(pos) + "].embedding: want " + strconv.Itoa(len(dst)) + " numbers (embedding.dimensions)")
			return false
		}
		if normalize && !vecindex.Normalize(dst) {
			perr = errors.New("data[" + strconv.Itoa(pos) + "].embedding: a zero vector")
			return false
		}
		count++
		return true
	})
	if perr != nil {
		return perr
	}
	if count != r.N {
		return errors.New("the embeddings answer has " + strconv.Itoa(count) + " vectors for " + strconv.Itoa(r.N) + " inputs")
	}
	if u, uk, ok := rawjson.GetPath(body, "usage", "prompt_tokens"); ok && uk == rawjson.Number {
		r.Tokens, _ = rawjson.ParseInt(u)
	}
	return nil
}

// resultPool recycles per-request Results.
var resultPool = sync.Pool{New: func() any { return new(Result) }}

// AcquireResult returns a pooled Result; ReleaseResult gives it back, after
// which its vectors must no longer be used.
func AcquireResult() *Result { return resultPool.Get().(*Result) }

// ReleaseResult returns r to the pool.
func ReleaseResult(r *Result) { resultPool.Put(r) }

// Preparer is implemented by guardrail checkers that compare texts with
// example vectors (edge/guard/semantic): Prepare embeds the examples with
// the snapshot's embedding model, through sess, when a config applies. An
// error fails the load.
type Preparer interface {
	Prepare(ctx context.Context, s *snapshot.Snapshot, sess *Session) error
}
