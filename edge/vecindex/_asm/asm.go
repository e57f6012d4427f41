// Command asm generates dot_amd64.s and dot_amd64_stub.go (package
// vecindex) with avo: the AVX2/FMA float32 dot product. Run it with
// `go generate ./edge/vecindex` (see gen.go); its own module keeps avo
// out of gw's go.mod.
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("amd64,!goexperiment.simd,!purego")
	TEXT("dotAVX2", NOSPLIT, "func(a, b []float32, n int) float32")
	Doc("dotAVX2 returns the dot product of a[:n] and b[:n]: four eight-wide",
		"FMA accumulators over 32 floats per step, then eight at a time. n must",
		"be a multiple of 8 and at most len(a) and len(b); the caller checks.")
	pa := Load(Param("a").Base(), GP64())
	pb := Load(Param("b").Base(), GP64())
	n := Load(Param("n"), GP64())
	acc := []reg.VecVirtual{YMM(), YMM(), YMM(), YMM()}
	for _, r := range acc {
		VXORPS(r, r, r)
	}
	Label("loop32")
	CMPQ(n, Imm(32))
	JL(LabelRef("loop8"))
	for i := 0; i < 4; i++ {
		x := YMM()
		VMOVUPS(Mem{Base: pa, Disp: 32 * i}, x)
		VFMADD231PS(Mem{Base: pb, Disp: 32 * i}, x, acc[i])
	}
	ADDQ(Imm(128), pa)
	ADDQ(Imm(128), pb)
	SUBQ(Imm(32), n)
	JMP(LabelRef("loop32"))

	Label("loop8")
	CMPQ(n, Imm(8))
	JL(LabelRef("reduce"))
	x := YMM()
	VMOVUPS(Mem{Base: pa}, x)
	VFMADD231PS(Mem{Base: pb}, x, acc[0])
	ADDQ(Imm(32), pa)
	ADDQ(Imm(32), pb)
	SUBQ(Imm(8), n)
	JMP(LabelRef("loop8"))

	Label("reduce")
	VADDPS(acc[1], acc[0], acc[0])
	VADDPS(acc[3], acc[2], acc[2])
	VADDPS(acc[2], acc[0], acc[0])
	hi := XMM()
	lo := acc[0].AsX()
	VEXTRACTF128(Imm(1), acc[0], hi)
	VADDPS(hi, lo, lo)
	VMOVHLPS(lo, lo, hi)
	VADDPS(hi, lo, lo)
	VMOVSHDUP(lo, hi)
	VADDSS(hi, lo, lo)
	VZEROUPPER()
	Store(lo, ReturnIndex(0))
	RET()
	Generate()
}
