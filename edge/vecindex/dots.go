package vecindex

// dotsGeneric sets out[i] to the dot product of codes[i*stride:][:stride]
// (uint8) and q[:stride] (int8), in int32: the portable loop behind dots,
// giving the same integers as the AVX2 kernel. Four accumulators keep the
// adds independent.
func dotsGeneric(codes []uint8, q []int8, stride int, out []int32) {
	q = q[:stride]
	for i := range out {
		c := codes[i*stride : (i+1)*stride]
		var s0, s1, s2, s3 int32
		j := 0
		for ; j+4 <= len(c); j += 4 {
			cc := c[j : j+4 : j+4]
			qq := q[j : j+4 : j+4]
			s0 += int32(cc[0]) * int32(qq[0])
			s1 += int32(cc[1]) * int32(qq[1])
			s2 += int32(cc[2]) * int32(qq[2])
			s3 += int32(cc[3]) * int32(qq[3])
		}
		for ; j < len(c); j++ {
			s0 += int32(c[j]) * int32(q[j])
		}
		out[i] = (s0 + s1) + (s2 + s3)
	}
}
