package vecindex

import "strconv"

// Flat is a mutable set of unit vectors of one length, stored back to back
// (the semantic response cache's per-scope candidates): Add appends,
// Remove moves the last vector into the freed slot, Best scans them all
// with the same early abandon as Index.Pick. Not safe for concurrent use;
// its owner locks.
type Flat struct {
	dims, nb int
	data     []float32 // vector i is data[i*dims:(i+1)*dims]
	tails    []float32 // tails[i*nb+k]: see Index.tails
}

// NewFlat returns an empty set of vectors of length dims.
func NewFlat(dims int) *Flat {
	nb := (dims + block - 1) / block
	if nb > maxBlocks {
		nb = 0
	}
	return &Flat{dims: dims, nb: nb}
}

// Dims is the vector length.
func (f *Flat) Dims() int { return f.dims }

// Len is the number of vectors.
func (f *Flat) Len() int {
	if f.dims == 0 {
		return 0
	}
	return len(f.data) / f.dims
}

// Add appends a copy of the unit vector v and returns its slot.
func (f *Flat) Add(v []float32) int {
	if len(v) != f.dims {
		panic("BUG: vecindex: Flat.Add of a vector of length " + strconv.Itoa(len(v)) + " to a set of " + strconv.Itoa(f.dims))
	}
	i := f.Len()
	f.data = append(f.data, v...)
	if f.nb > 0 {
		var t [maxBlocks + 1]float32
		tailNorms(v, t[:f.nb+1])
		f.tails = append(f.tails, t[:f.nb]...)
	}
	return i
}

// Remove deletes slot i by moving the last vector into it; it returns the
// slot the moved vector had (the caller renumbers it to i), or -1 when i
// was the last.
func (f *Flat) Remove(i int) int {
	last := f.Len() - 1
	if i < 0 || i > last {
		panic("BUG: vecindex: Flat.Remove of slot " + strconv.Itoa(i) + " of " + strconv.Itoa(last+1))
	}
	moved := -1
	if i != last {
		copy(f.data[i*f.dims:(i+1)*f.dims], f.data[last*f.dims:])
		if f.nb > 0 {
			copy(f.tails[i*f.nb:(i+1)*f.nb], f.tails[last*f.nb:])
		}
		moved = last
	}
	f.data = f.data[:last*f.dims]
	if f.nb > 0 {
		f.tails = f.tails[:last*f.nb]
	}
	return moved
}

// Best returns the slot of the vector scoring highest against the unit
// vector q, with its score, among those reaching min (within Epsilon);
// -1 and -1 when none does. Vectors that cannot reach the best so far are
// abandoned part-way, exactly as in Index.Pick.
func (f *Flat) Best(q []float32, min float32) (int, float32) {
	if len(q) != f.dims {
		panic("BUG: vecindex: Flat.Best with a query of length " + strconv.Itoa(len(q)) + " on a set of " + strconv.Itoa(f.dims))
	}
	best, score := -1, float32(-1)
	var qt [maxBlocks + 1]float32
	if f.nb > 0 {
		tailNorms(q, qt[:f.nb+1])
	}
	floor := min - Epsilon
	for i, n := 0, f.Len(); i < n; i++ {
		v := f.data[i*f.dims : (i+1)*f.dims]
		need := max(floor, score)
		var s float32
		if f.nb == 0 {
			s = Dot(q, v)
		} else {
			var ok bool
			if s, ok = partialDot(q, v, qt[:f.nb+1], f.tails[i*f.nb:(i+1)*f.nb], need, f.nb, f.dims); !ok {
				continue
			}
		}
		if s >= floor && (best < 0 || s > score) {
			best, score = i, s
		}
	}
	return best, score
}
