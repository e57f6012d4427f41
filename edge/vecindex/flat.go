package vecindex

import "strconv"

// Flat is a mutable set of unit vectors of one length, stored back to back
// (the semantic response cache's per-scope candidates): Add appends,
// Remove moves the last vector into the freed slot, Best scans them all
// with the same quantised first pass as Index.Pick. Not safe for
// concurrent use; its owner locks.
type Flat struct {
	dims int
	data []float32 // vector i is data[i*dims:(i+1)*dims]
	z    quant
}

// NewFlat returns an empty set of vectors of length dims.
func NewFlat(dims int) *Flat {
	return &Flat{dims: dims, z: newQuant(dims)}
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
	f.z.add(v)
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
		f.z.move(i, last)
		moved = last
	}
	f.data = f.data[:last*f.dims]
	f.z.truncate(last)
	return moved
}

// Best returns the slot of the vector scoring highest against the unit
// vector q, with its score, among those reaching min (within Epsilon);
// -1 and -1 when none does; ties go to the lower slot. The result is
// exactly that of scoring every vector with Dot; the quantised first pass
// only rules vectors out (quant.go).
func (f *Flat) Best(q []float32, min float32) (int, float32) {
	if len(q) != f.dims {
		panic("BUG: vecindex: Flat.Best with a query of length " + strconv.Itoa(len(q)) + " on a set of " + strconv.Itoa(f.dims))
	}
	start := [2]int{0, f.Len()}
	th := [1]float32{min}
	i, _, s := f.z.best(q, f.data, start[:], th[:])
	return i, s
}
