//go:build amd64 && !purego

#include "textflag.h"

// func specialAVX2(p *byte, n int) int
//
// The index in p[:n] of the first byte that is a control character
// (< 0x20), '"', '\\' or >= 0x80, searched in whole 32-byte blocks only:
// without one, the length of those blocks (n rounded down to 32).
TEXT ·specialAVX2(SB), NOSPLIT, $0-24
	MOVQ	p+0(FP), SI
	MOVQ	n+8(FP), CX
	MOVQ	$0x2222222222222222, AX
	MOVQ	AX, X1
	VPBROADCASTQ	X1, Y1
	MOVQ	$0x5c5c5c5c5c5c5c5c, AX
	MOVQ	AX, X2
	VPBROADCASTQ	X2, Y2
	MOVQ	$0x2020202020202020, AX
	MOVQ	AX, X3
	VPBROADCASTQ	X3, Y3
	XORQ	DX, DX
	SUBQ	$32, CX
	JL	specialNone

specialLoop:
	VMOVDQU	(SI)(DX*1), Y0
	VPCMPEQB	Y0, Y1, Y4
	VPCMPEQB	Y0, Y2, Y5
	// Signed, 0x20 > b holds for the control characters and for every
	// byte >= 0x80 (negative).
	VPCMPGTB	Y0, Y3, Y6
	VPOR	Y4, Y5, Y4
	VPOR	Y4, Y6, Y4
	VPMOVMSKB	Y4, AX
	TESTL	AX, AX
	JNZ	specialFound
	ADDQ	$32, DX
	CMPQ	DX, CX
	JLE	specialLoop

specialNone:
	VZEROUPPER
	MOVQ	DX, ret+16(FP)
	RET

specialFound:
	BSFL	AX, AX
	ADDQ	AX, DX
	VZEROUPPER
	MOVQ	DX, ret+16(FP)
	RET

// func quoteAVX2(p *byte, n int) int
//
// specialAVX2 for '"' and '\\' only.
TEXT ·quoteAVX2(SB), NOSPLIT, $0-24
	MOVQ	p+0(FP), SI
	MOVQ	n+8(FP), CX
	MOVQ	$0x2222222222222222, AX
	MOVQ	AX, X1
	VPBROADCASTQ	X1, Y1
	MOVQ	$0x5c5c5c5c5c5c5c5c, AX
	MOVQ	AX, X2
	VPBROADCASTQ	X2, Y2
	XORQ	DX, DX
	SUBQ	$32, CX
	JL	quoteNone

quoteLoop:
	VMOVDQU	(SI)(DX*1), Y0
	VPCMPEQB	Y0, Y1, Y4
	VPCMPEQB	Y0, Y2, Y5
	VPOR	Y4, Y5, Y4
	VPMOVMSKB	Y4, AX
	TESTL	AX, AX
	JNZ	quoteFound
	ADDQ	$32, DX
	CMPQ	DX, CX
	JLE	quoteLoop

quoteNone:
	VZEROUPPER
	MOVQ	DX, ret+16(FP)
	RET

quoteFound:
	BSFL	AX, AX
	ADDQ	AX, DX
	VZEROUPPER
	MOVQ	DX, ret+16(FP)
	RET
