// Package vecindex is an in-memory vector index for cosine similarity over
// small example sets (semantic routes, guardrail examples, cache entries):
// float32 vectors normalised to unit length when they are added, so the
// cosine of two vectors is their dot product, grouped so that one pass
// gives every group's best score (`max` aggregation).
//
// An Index is immutable once built and safe for concurrent use. Searching
// allocates nothing.
package vecindex

import (
	"errors"
	"math"
	"strconv"
)

// Index holds unit vectors of one length, stored back to back and sorted by
// group so a search keeps each group's best score in a register.
type Index struct {
	dims   int
	data   []float32 // vector i is data[i*dims:(i+1)*dims]
	start  []int     // group g holds vectors start[g] to start[g+1]-1
	groups int
	z      quant // the int8 codes Pick scores first (quant.go)
}

// Builder collects vectors for an Index. Not safe for concurrent use.
type Builder struct {
	dims   int
	groups int
	vecs   [][]float32 // per group, back to back
}

// NewBuilder returns a builder for vectors of length dims in groups
// numbered 0 to groups-1.
func NewBuilder(dims, groups int) *Builder {
	return &Builder{dims: dims, groups: groups, vecs: make([][]float32, groups)}
}

// Add copies v, normalised to unit length, into group g. It fails for a
// vector of the wrong length, a zero vector, or one holding NaN or Inf.
func (b *Builder) Add(g int, v []float32) error {
	if g < 0 || g >= b.groups {
		return errors.New("vecindex: group " + strconv.Itoa(g) + " out of range")
	}
	if len(v) != b.dims {
		return errors.New("vecindex: vector of length " + strconv.Itoa(len(v)) + "; want " + strconv.Itoa(b.dims))
	}
	n := len(b.vecs[g])
	b.vecs[g] = append(b.vecs[g], v...)
	if !Normalize(b.vecs[g][n:]) {
		b.vecs[g] = b.vecs[g][:n]
		return errors.New("vecindex: vector has zero length or is not finite")
	}
	return nil
}

// Build returns the index. The builder must not be used afterwards.
func (b *Builder) Build() *Index {
	x := &Index{dims: b.dims, groups: b.groups, start: make([]int, b.groups+1)}
	total := 0
	for _, v := range b.vecs {
		total += len(v)
	}
	x.data = make([]float32, 0, total)
	for g, v := range b.vecs {
		x.start[g] = len(x.data) / max(b.dims, 1)
		x.data = append(x.data, v...)
	}
	x.start[b.groups] = len(x.data) / max(b.dims, 1)
	b.vecs = nil
	x.z = newQuant(x.dims)
	for i := 0; i < x.Len(); i++ {
		x.z.add(x.data[i*x.dims : (i+1)*x.dims])
	}
	return x
}

// Dims is the vector length.
func (x *Index) Dims() int { return x.dims }

// Groups is the number of groups.
func (x *Index) Groups() int { return x.groups }

// Len is the number of vectors.
func (x *Index) Len() int { return x.start[x.groups] }

// GroupLen is the number of vectors in group g.
func (x *Index) GroupLen(g int) int { return x.start[g+1] - x.start[g] }

// Normalize scales v to unit L2 length in place. It reports false, leaving
// v unchanged, when v is zero or not finite.
func Normalize(v []float32) bool {
	var sum float64
	for _, f := range v {
		sum += float64(f) * float64(f)
	}
	if sum == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return false
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
	return true
}

// GroupScores writes the best score of each group against the unit vector
// q into dst (len Groups(); a group without vectors gets -1, below any
// cosine) and returns dst.
func (x *Index) GroupScores(q []float32, dst []float32) []float32 {
	if len(q) != x.dims {
		panic("BUG: vecindex: query of length " + strconv.Itoa(len(q)) + " on an index of " + strconv.Itoa(x.dims))
	}
	for g := 0; g < x.groups; g++ {
		best := float32(-1)
		for i := x.start[g]; i < x.start[g+1]; i++ {
			if s := Dot(q, x.data[i*x.dims:(i+1)*x.dims]); s > best {
				best = s
			}
		}
		dst[g] = best
	}
	return dst
}

// Pick returns the group with the highest best score among the groups whose
// best score reaches their threshold (thresholds[g]), with that score; -1
// and -1 when none does; a score within Epsilon below a threshold reaches
// it. q must be a unit vector of length Dims(). Ties go to the lower group
// number. The result is exactly that of scoring every vector with Dot (as
// GroupScores does): the quantised first pass only rules out vectors whose
// score provably cannot change it (quant.go).
func (x *Index) Pick(q []float32, thresholds []float32) (group int, score float32) {
	if len(q) != x.dims || len(thresholds) < x.groups {
		panic("BUG: vecindex: Pick with a query of length " + strconv.Itoa(len(q)) + " or too few thresholds")
	}
	_, group, score = x.z.best(q, x.data, x.start, thresholds[:x.groups])
	return group, score
}

// Epsilon is the float32 rounding a score may carry: a score within it of a
// threshold reaches the threshold (a text identical to an example scores
// 0.99999994, and must reach a threshold of 1).
const Epsilon = 1e-6
