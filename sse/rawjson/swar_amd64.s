//go:build amd64 && !purego

#include "textflag.h"

// func indexAVX2(p *byte, n int, below uint64) int
//
// The index in p[:n] of the first byte that is '"', '\\', or (as a signed
// byte) less than every byte of below, searched in whole 32-byte blocks
// only: without one, the length of those blocks (n rounded down to 32).
// below = 0x20 in every byte adds the control characters and every byte
// >= 0x80 (negative); 0x80 in every byte (-128) adds nothing.
TEXT ·indexAVX2(SB), NOSPLIT, $0-32
	MOVQ	p+0(FP), SI
	MOVQ	n+8(FP), CX
	MOVQ	below+16(FP), AX
	MOVQ	AX, X3
	VPBROADCASTQ	X3, Y3
	MOVQ	$0x2222222222222222, AX
	MOVQ	AX, X1
	VPBROADCASTQ	X1, Y1
	MOVQ	$0x5c5c5c5c5c5c5c5c, AX
	MOVQ	AX, X2
	VPBROADCASTQ	X2, Y2
	XORQ	DX, DX
	SUBQ	$32, CX
	JL	none

loop:
	VMOVDQU	(SI)(DX*1), Y0
	VPCMPEQB	Y0, Y1, Y4
	VPCMPEQB	Y0, Y2, Y5
	VPCMPGTB	Y0, Y3, Y6 // Y6 = below > b, signed
	VPOR	Y4, Y5, Y4
	VPOR	Y4, Y6, Y4
	VPMOVMSKB	Y4, AX
	TESTL	AX, AX
	JNZ	found
	ADDQ	$32, DX
	CMPQ	DX, CX
	JLE	loop

none:
	VZEROUPPER
	MOVQ	DX, ret+24(FP)
	RET

found:
	BSFL	AX, AX
	ADDQ	AX, DX
	VZEROUPPER
	MOVQ	DX, ret+24(FP)
	RET
