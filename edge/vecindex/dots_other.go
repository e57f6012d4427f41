//go:build !amd64 || purego

package vecindex

// dots sets out[i] to the integer dot product of vector i of codes and q:
// the portable build.
func dots(codes []uint8, q []int8, stride int, out []int32) {
	dotsGeneric(codes, q, stride, out)
}
