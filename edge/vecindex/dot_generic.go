//go:build !amd64 || (purego && !goexperiment.simd)

package vecindex

// Dot returns the dot product of a and b (len(b) ≥ len(a)). The portable
// build: the unrolled loop of dotGeneric. Building with GOEXPERIMENT=simd
// on amd64 uses AVX2 FMA lanes instead (dot_simd.go).
func Dot(a, b []float32) float32 { return dotGeneric(a, b) }
