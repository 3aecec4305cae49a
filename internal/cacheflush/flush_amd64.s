#include "textflag.h"

// func flushLines(p unsafe.Pointer, n uintptr)
TEXT ·flushLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
	ADDQ AX, CX
	ANDQ $~63, AX
loop:
	CMPQ AX, CX
	JAE  done
	CLFLUSH (AX)
	ADDQ $64, AX
	JMP  loop
done:
	MFENCE
	RET
