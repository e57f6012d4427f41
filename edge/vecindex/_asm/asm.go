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
	ConstraintExpr("amd64,!purego")
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

	dotsU8()
	Generate()
}

// dotsU8 is the quantised first pass of a search: the integer dot product
// of one query (int8 codes) with each vector of a block (uint8 codes), 32
// dimensions per VPMADDUBSW (unsigned × signed bytes, adjacent pairs added
// into int16) and VPMADDWD by ones (pairs of int16 into int32), four
// accumulators over 128 dimensions per step. The codes' ranges keep
// VPMADDUBSW from saturating: 2·255·64 < 32,768.
func dotsU8() {
	TEXT("dotsU8", NOSPLIT, "func(codes []uint8, q []int8, stride int, out []int32)")
	Doc("dotsU8 sets out[i] to the dot product of codes[i*stride:(i+1)*stride]",
		"and q[:stride] for each i < len(out). stride must be a positive multiple",
		"of 32, len(q) ≥ stride, len(codes) ≥ len(out)*stride and every q in",
		"[-64, 64]; the caller checks.")
	pc := Load(Param("codes").Base(), GP64())
	qb := Load(Param("q").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	po := Load(Param("out").Base(), GP64())
	cnt := Load(Param("out").Len(), GP64())
	pq := GP64()
	n := GP64()
	ones := YMM()
	VPCMPEQW(ones, ones, ones)
	VPSRLW(Imm(15), ones, ones) // sixteen int16 ones
	acc := []reg.VecVirtual{YMM(), YMM(), YMM(), YMM()}

	Label("vec")
	TESTQ(cnt, cnt)
	JZ(LabelRef("done"))
	for _, r := range acc {
		VPXOR(r, r, r)
	}
	MOVQ(qb, pq)
	MOVQ(stride, n)

	step := func(i int, disp int) {
		x := YMM()
		VMOVDQU(Mem{Base: pc, Disp: disp}, x)
		VPMADDUBSW(Mem{Base: pq, Disp: disp}, x, x)
		VPMADDWD(ones, x, x)
		VPADDD(x, acc[i], acc[i])
	}
	Label("loop128")
	CMPQ(n, Imm(128))
	JL(LabelRef("loop32"))
	for i := 0; i < 4; i++ {
		step(i, 32*i)
	}
	ADDQ(Imm(128), pc)
	ADDQ(Imm(128), pq)
	SUBQ(Imm(128), n)
	JMP(LabelRef("loop128"))

	Label("loop32")
	TESTQ(n, n)
	JZ(LabelRef("reduce"))
	step(0, 0)
	ADDQ(Imm(32), pc)
	ADDQ(Imm(32), pq)
	SUBQ(Imm(32), n)
	JMP(LabelRef("loop32"))

	Label("reduce")
	VPADDD(acc[1], acc[0], acc[0])
	VPADDD(acc[3], acc[2], acc[2])
	VPADDD(acc[2], acc[0], acc[0])
	hi := XMM()
	lo := acc[0].AsX()
	VEXTRACTI128(Imm(1), acc[0], hi)
	VPADDD(hi, lo, lo)
	VPSHUFD(Imm(0x4e), lo, hi)
	VPADDD(hi, lo, lo)
	VPSHUFD(Imm(0xb1), lo, hi)
	VPADDD(hi, lo, lo)
	VMOVD(lo, Mem{Base: po}) // not MOVD: Go's assembler reads it as MOVQ
	ADDQ(Imm(4), po)
	DECQ(cnt)
	JMP(LabelRef("vec"))

	Label("done")
	VZEROUPPER()
	RET()
}
