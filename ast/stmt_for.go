package ast

// ForKind says how the iterations of a [For] loop are executed. The
// interpreter runs every kind serially; the code generators honour them.
type ForKind uint8

// The loop kinds.
const (
	Serial ForKind = iota
	Parallel
	Vectorized
	Unrolled
	GPUBlockX
	GPUBlockY
	GPUBlockZ
	GPUThreadX
	GPUThreadY
	GPUThreadZ
)

var forKindNames = [...]string{
	Serial:     "serial",
	Parallel:   "parallel",
	Vectorized: "vectorized",
	Unrolled:   "unrolled",
	GPUBlockX:  "bind(blockIdx.x)",
	GPUBlockY:  "bind(blockIdx.y)",
	GPUBlockZ:  "bind(blockIdx.z)",
	GPUThreadX: "bind(threadIdx.x)",
	GPUThreadY: "bind(threadIdx.y)",
	GPUThreadZ: "bind(threadIdx.z)",
}

// String returns the kind as the text form prints it before "for".
func (k ForKind) String() string {
	if k.Valid() {
		return forKindNames[k]
	}
	return "?"
}

// Valid reports whether k is one of the loop kinds.
func (k ForKind) Valid() bool { return int(k) < len(forKindNames) }

// IsGPUBlock reports whether k binds the loop to blockIdx.x, .y or .z.
func (k ForKind) IsGPUBlock() bool { return k >= GPUBlockX && k <= GPUBlockZ }

// IsGPUThread reports whether k binds the loop to threadIdx.x, .y or .z.
func (k ForKind) IsGPUThread() bool { return k >= GPUThreadX && k <= GPUThreadZ }

// For is a loop: Var takes the values Min, Min+1, ..., Min+Extent-1 and Body
// runs once for each. Var's type is the type of Min and Extent (an integer
// type). Annotations carry free key/value hints for the code generators.
type For struct {
	Var         *Var
	Min, Extent Expr
	Kind        ForKind
	Annotations Annotations
	Body        Stmt
}

// NewFor returns a serial loop of v over [min, min+extent).
func NewFor(v *Var, min, extent Expr, body Stmt) *For {
	return &For{Var: v, Min: min, Extent: extent, Body: body}
}
