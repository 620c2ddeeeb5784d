#include "textflag.h"

// func dotInt8AVX2(q *int16, v *int8, n int) int32
TEXT ·dotInt8AVX2(SB), NOSPLIT, $0-28
	MOVQ q+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ n+16(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y3, Y3, Y3

loop:
	VPMOVSXBW (SI), Y1
	VPMADDWD  (DI), Y1, Y1
	VPADDD    Y1, Y0, Y0
	VPMOVSXBW 16(SI), Y2
	VPMADDWD  32(DI), Y2, Y2
	VPADDD    Y2, Y3, Y3
	ADDQ      $32, SI
	ADDQ      $64, DI
	SUBQ      $32, CX
	JNZ       loop

	VPADDD       Y3, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4e, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xb1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, AX
	VZEROUPPER
	MOVL         AX, ret+24(FP)
	RET
