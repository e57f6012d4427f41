package vecindex

// The quantised first pass. A search reads every stored vector once, so it
// is bound by memory: 1,000 float32 vectors of 1,536 dimensions are 6 MB
// per query, more than a core's caches hold. Each vector is therefore also
// kept as 8-bit codes with a scale of its own (a quarter of the bytes, read
// back to back), the query as 7-bit codes, and a search scores the codes
// first (integer multiply-adds, dots). Quantisation moves a score by at
// most a bound known per vector (Cauchy–Schwarz below), so only vectors
// whose bound interval reaches the answer are scored again, in float32,
// by Dot: the answer (which vector, which score) is exactly the one a
// float32 scan with Dot over every vector gives.
//
// The bound. With v̂ = s_v·a the vector's codes times its scale, e = v - v̂,
// and q̂, f = q - q̂ likewise for the query:
//
//	v·q - v̂·q̂ = e·q + v̂·f,  so  |v·q - v̂·q̂| ≤ |e|·|q| + |v̂|·|f|.
//
// |e| and |v̂| are computed when a vector is added, |q| and |f| per query,
// all in float64 and rounded up; slack covers the float32 rounding of Dot
// itself (at most about dims·2⁻²⁴ for unit vectors).

import (
	"cmp"
	"math"
	"slices"
	"sync"
)

// quant holds the codes of a set of vectors and what bounds their error.
// A vector's code a_j in [-127, 127] is stored as the byte a_j+128 (the
// kernel multiplies unsigned by signed bytes); the query's codes b_j are
// in [-qmax, qmax] = [-64, 64] so no pair of products can saturate the
// kernel's int16 sums (2·255·64 < 32,768). The kernel's sum is then
// Σ(a_j+128)·b_j = a·b + 128·Σb_j. With on false, searches score every
// vector by Dot.
type quant struct {
	dims, stride int       // stride: dims rounded up to 32, the kernel's step
	on           bool      // codes are kept
	codes        []uint8   // vector i: codes[i*stride:(i+1)*stride], padded with 128 (a zero)
	scale        []float32 // v̂ = scale[i]·a
	errN, hatN   []float32 // |e| and |v̂|, rounded up
}

// qmax is the largest query code.
const qmax = 64

// newQuant sizes the codes for vectors of length dims. Every partial sum
// of the kernel is bounded by 255·64·stride, inside int32 below some
// 130,000 dimensions; longer vectors are scanned in float32 only.
func newQuant(dims int) quant {
	z := quant{dims: dims, stride: (dims + 31) &^ 31}
	z.on = z.stride > 0 && int64(255*qmax)*int64(z.stride) <= math.MaxInt32
	return z
}

// add appends the codes of v.
func (z *quant) add(v []float32) {
	if !z.on {
		return
	}
	n := len(z.codes)
	z.codes = slices.Grow(z.codes, z.stride)[:n+z.stride]
	c := z.codes[n:]
	for j := range c {
		c[j] = 128
	}
	s := maxAbs(v) / 127
	var e2, a2 float64
	for j, f := range v {
		var a int32
		if s > 0 {
			a = int32(min(max(math.Round(float64(f)/float64(s)), -127), 127))
		}
		c[j] = uint8(a + 128)
		d := float64(f) - float64(s)*float64(a)
		e2 += d * d
		a2 += float64(a) * float64(a)
	}
	z.scale = append(z.scale, s)
	z.errN = append(z.errN, roundUp(math.Sqrt(e2)))
	z.hatN = append(z.hatN, roundUp(float64(s)*math.Sqrt(a2)))
}

// move copies vector from's codes over vector to's.
func (z *quant) move(to, from int) {
	if !z.on {
		return
	}
	copy(z.codes[to*z.stride:(to+1)*z.stride], z.codes[from*z.stride:(from+1)*z.stride])
	z.scale[to], z.errN[to], z.hatN[to] = z.scale[from], z.errN[from], z.hatN[from]
}

// truncate keeps the first n vectors' codes.
func (z *quant) truncate(n int) {
	if !z.on {
		return
	}
	z.codes = z.codes[:n*z.stride]
	z.scale, z.errN, z.hatN = z.scale[:n], z.errN[:n], z.hatN[:n]
}

// roundUp returns the smallest float32 not below x, so a bound computed in
// float64 stays a bound once stored.
func roundUp(x float64) float32 {
	f := float32(x)
	if float64(f) < x {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return f
}

// maxAbs returns the largest |f| of v, NaN when v holds one. A plain
// comparison, not the max builtin: max must order NaN and ±0, which costs
// it several instructions a step.
func maxAbs(v []float32) float32 {
	var m float32
	for _, f := range v {
		a := math.Float32frombits(math.Float32bits(f) &^ (1 << 31))
		if a > m || a != a {
			m = a
		}
	}
	return m
}

// candidate is a vector whose bound interval reaches the answer.
type candidate struct {
	hi    float64 // upper bound of its float32 score
	i, g  int32   // vector and group
	floor float32 // its group's threshold less Epsilon
}

// scratch is one search's working memory, pooled so a search allocates
// nothing once warm.
type scratch struct {
	q    []int8
	dots []int32
	cand []candidate
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// best returns the vector scoring highest by Dot against q among those
// reaching their group's threshold (group g holds vectors start[g] to
// start[g+1]-1, threshold th[g], reached within Epsilon), with its score;
// ties go to the lower vector; -1 and -1 when none reaches. data holds the
// float32 vectors (stride dims). This is, exactly, the scan of every
// vector with Dot (scanBest); the codes only rule vectors out.
func (z *quant) best(q, data []float32, start []int, th []float32) (vec, group int, score float32) {
	n := start[len(start)-1]
	if !z.on || n == 0 {
		return scanBest(q, data, z.dims, start, th)
	}
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)

	// The query's codes, its norm and its quantisation error.
	if cap(sc.q) < z.stride {
		sc.q = make([]int8, z.stride)
	}
	qc := sc.q[:z.stride]
	m := maxAbs(q)
	if !(m > 0) || math.IsInf(float64(m), 0) {
		return scanBest(q, data, z.dims, start, th) // a zero or non-finite query
	}
	// Any rounding of q to codes is sound (the bound uses the residual
	// actually left); RoundToEven is one instruction, and no branch on
	// the sign, which random signs would mispredict half the time.
	sq := float64(m) / qmax
	inv := qmax / float64(m)
	// Two sums of each kind, so the adds do not all wait on one another.
	var q2a, q2b, f2a, f2b float64
	var bsum int32
	qc = qc[:len(q)]
	j := 0
	for ; j+2 <= len(q); j += 2 {
		f0, f1 := float64(q[j]), float64(q[j+1])
		b0 := min(max(int32(math.RoundToEven(f0*inv)), -qmax), qmax)
		b1 := min(max(int32(math.RoundToEven(f1*inv)), -qmax), qmax)
		qc[j], qc[j+1] = int8(b0), int8(b1)
		bsum += b0 + b1
		d0, d1 := f0-sq*float64(b0), f1-sq*float64(b1)
		f2a += d0 * d0
		f2b += d1 * d1
		q2a += f0 * f0
		q2b += f1 * f1
	}
	for ; j < len(q); j++ {
		f := float64(q[j])
		b := min(max(int32(math.RoundToEven(f*inv)), -qmax), qmax)
		qc[j] = int8(b)
		bsum += b
		d := f - sq*float64(b)
		f2a += d * d
		q2a += f * f
	}
	qc = qc[:z.stride]
	clear(qc[z.dims:])
	bias := 128 * bsum // what the vectors' +128 adds to each sum
	qn, fn := math.Sqrt(q2a+q2b)*(1+1e-12), math.Sqrt(f2a+f2b)*(1+1e-12)
	// Dot's own float32 rounding (a sum of dims products of magnitude at
	// most |q|·|v| ≈ |q| in all), twice over, and the codes' float64 sums.
	slack := (float64(z.dims)*1.2e-7+1e-6)*max(qn, 1) + 1e-9

	// First pass: every vector's integer dot product.
	if cap(sc.dots) < n {
		sc.dots = make([]int32, n)
	}
	dots(z.codes, qc, z.stride, sc.dots[:n])

	// Second: each vector's score lies within [lo, hi]. lowest is the
	// highest lo of a vector that surely reaches its threshold: the answer
	// scores at least that, so a vector whose hi is below it cannot be the
	// answer (nor tie with it).
	cands := sc.cand[:0]
	lowest := math.Inf(-1)
	for g := 0; g+1 < len(start); g++ {
		floor := th[g] - Epsilon
		f64 := float64(floor)
		for i := start[g]; i < start[g+1]; i++ {
			a := float64(sc.dots[i]-bias) * float64(z.scale[i]) * sq
			b := float64(z.errN[i])*qn + float64(z.hatN[i])*fn + slack
			hi := a + b
			if hi < f64 || hi < lowest {
				continue
			}
			if lo := a - b; lo >= f64 && lo > lowest {
				lowest = lo
			}
			cands = append(cands, candidate{hi: hi, i: int32(i), g: int32(g), floor: floor})
		}
	}
	// Drop those that an answer found later in the pass ruled out, and
	// score the rest highest bound first: once a bound is below the best
	// score found, nothing after it can win.
	k := 0
	for _, c := range cands {
		if c.hi >= lowest {
			cands[k] = c
			k++
		}
	}
	cands = cands[:k]
	slices.SortFunc(cands, func(a, b candidate) int { return cmp.Compare(b.hi, a.hi) })
	bi, bg, bs := -1, -1, float32(-1)
	for _, c := range cands {
		if bi >= 0 && c.hi < float64(bs) {
			break
		}
		i := int(c.i)
		s := Dot(q, data[i*z.dims:(i+1)*z.dims])
		if s >= c.floor && (bi < 0 || s > bs || (s == bs && i < bi)) {
			bi, bg, bs = i, int(c.g), s
		}
	}
	sc.cand = cands[:0]
	return bi, bg, bs
}

// scanBest is best without codes: Dot over every vector.
func scanBest(q, data []float32, dims int, start []int, th []float32) (vec, group int, score float32) {
	bi, bg, bs := -1, -1, float32(-1)
	for g := 0; g+1 < len(start); g++ {
		floor := th[g] - Epsilon
		for i := start[g]; i < start[g+1]; i++ {
			if s := Dot(q, data[i*dims:(i+1)*dims]); s >= floor && (bi < 0 || s > bs) {
				bi, bg, bs = i, g, s
			}
		}
	}
	return bi, bg, bs
}
