//go:build goexperiment.simd && amd64

package vecindex

import "simd/archsimd"

// useSIMD is decided once: AVX2 with FMA.
var useSIMD = archsimd.X86.AVX2() && archsimd.X86.FMA()

// Dot returns the dot product of a and b (len(b) ≥ len(a)). Built with
// GOEXPERIMENT=simd on amd64, it runs on AVX2 FMA lanes: four independent
// eight-wide accumulators over 32 floats per step; otherwise (no AVX2)
// the portable unrolled loop (dotGeneric).
func Dot(a, b []float32) float32 {
	if !useSIMD || len(a) < 32 {
		return dotGeneric(a, b)
	}
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3 archsimd.Float32x8
	i := 0
	for ; i+32 <= n; i += 32 {
		s0 = archsimd.LoadFloat32x8Slice(a[i:]).MulAdd(archsimd.LoadFloat32x8Slice(b[i:]), s0)
		s1 = archsimd.LoadFloat32x8Slice(a[i+8:]).MulAdd(archsimd.LoadFloat32x8Slice(b[i+8:]), s1)
		s2 = archsimd.LoadFloat32x8Slice(a[i+16:]).MulAdd(archsimd.LoadFloat32x8Slice(b[i+16:]), s2)
		s3 = archsimd.LoadFloat32x8Slice(a[i+24:]).MulAdd(archsimd.LoadFloat32x8Slice(b[i+24:]), s3)
	}
	var lanes [8]float32
	s0.Add(s1).Add(s2.Add(s3)).Store(&lanes)
	s := ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]))
	if i < n {
		s += dotGeneric(a[i:], b[i:])
	}
	return s
}
