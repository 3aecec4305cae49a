package ast

// BinaryOp is the operator of a [Binary] expression.
type BinaryOp uint8

// The binary operators. Div and Mod truncate toward zero on integers (as C
// and Go do), FloorDiv and FloorMod round toward negative infinity (as index
// arithmetic needs: FloorMod(-1, 4) == 3). Div on floats is true division.
const (
	OpAdd BinaryOp = iota + 1
	OpSub
	OpMul
	OpDiv
	OpMod
	OpFloorDiv
	OpFloorMod
	OpMin
	OpMax
	OpEQ
	OpNE
	OpLT
	OpLE
	OpGT
	OpGE
	OpAnd
	OpOr
)

// binaryInfo describes how an operator prints: as an infix symbol with a
// precedence, or as a call (prec 0).
var binaryInfo = [...]struct {
	text string
	prec int
}{
	OpAdd:      {"+", 4},
	OpSub:      {"-", 4},
	OpMul:      {"*", 5},
	OpDiv:      {"/", 5},
	OpMod:      {"%", 5},
	OpFloorDiv: {"floordiv", 0},
	OpFloorMod: {"floormod", 0},
	OpMin:      {"min", 0},
	OpMax:      {"max", 0},
	OpEQ:       {"==", 3},
	OpNE:       {"!=", 3},
	OpLT:       {"<", 3},
	OpLE:       {"<=", 3},
	OpGT:       {">", 3},
	OpGE:       {">=", 3},
	OpAnd:      {"&&", 2},
	OpOr:       {"||", 1},
}

// String returns the operator as the text form spells it ("+", "floordiv").
func (op BinaryOp) String() string {
	if op > 0 && int(op) < len(binaryInfo) {
		return binaryInfo[op].text
	}
	return "?"
}

// Valid reports whether op is one of the binary operators.
func (op BinaryOp) Valid() bool { return op > 0 && int(op) < len(binaryInfo) }

// IsCompare reports whether op compares two numbers and yields a bool.
func (op BinaryOp) IsCompare() bool { return op >= OpEQ && op <= OpGE }

// IsLogical reports whether op combines two bools.
func (op BinaryOp) IsLogical() bool { return op == OpAnd || op == OpOr }

// Binary is a binary operation A op B.
type Binary struct {
	Op   BinaryOp
	A, B Expr
}

// Type returns Bool for comparisons and logical operators, and the type of A
// otherwise.
func (e *Binary) Type() DType {
	if e.Op.IsCompare() || e.Op.IsLogical() {
		return Bool
	}
	if e.A == nil {
		return Invalid
	}
	return e.A.Type()
}

func newBinary(op BinaryOp, a, b Expr) *Binary { return &Binary{Op: op, A: a, B: b} }

// Add returns a + b.
func Add(a, b Expr) *Binary { return newBinary(OpAdd, a, b) }

// Sub returns a - b.
func Sub(a, b Expr) *Binary { return newBinary(OpSub, a, b) }

// Mul returns a * b.
func Mul(a, b Expr) *Binary { return newBinary(OpMul, a, b) }

// Div returns a / b (truncating on integers).
func Div(a, b Expr) *Binary { return newBinary(OpDiv, a, b) }

// Mod returns a % b (the remainder of truncating division).
func Mod(a, b Expr) *Binary { return newBinary(OpMod, a, b) }

// FloorDiv returns floor(a / b) on integers.
func FloorDiv(a, b Expr) *Binary { return newBinary(OpFloorDiv, a, b) }

// FloorMod returns a - b*floor(a / b) on integers.
func FloorMod(a, b Expr) *Binary { return newBinary(OpFloorMod, a, b) }

// Min returns the smaller of a and b.
func Min(a, b Expr) *Binary { return newBinary(OpMin, a, b) }

// Max returns the larger of a and b.
func Max(a, b Expr) *Binary { return newBinary(OpMax, a, b) }

// EQ returns a == b.
func EQ(a, b Expr) *Binary { return newBinary(OpEQ, a, b) }

// NE returns a != b.
func NE(a, b Expr) *Binary { return newBinary(OpNE, a, b) }

// LT returns a < b.
func LT(a, b Expr) *Binary { return newBinary(OpLT, a, b) }

// LE returns a <= b.
func LE(a, b Expr) *Binary { return newBinary(OpLE, a, b) }

// GT returns a > b.
func GT(a, b Expr) *Binary { return newBinary(OpGT, a, b) }

// GE returns a >= b.
func GE(a, b Expr) *Binary { return newBinary(OpGE, a, b) }

// And returns a && b.
func And(a, b Expr) *Binary { return newBinary(OpAnd, a, b) }

// Or returns a || b.
func Or(a, b Expr) *Binary { return newBinary(OpOr, a, b) }
