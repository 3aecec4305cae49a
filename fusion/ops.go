package fusion

import "github.com/loom-go/loom/ast"

// Kind classifies operators for fusion, as CINN does.
type Kind uint8

const (
	// Elementwise operators compute each output element from the input
	// elements at the same (broadcast) index.
	Elementwise Kind = iota
	// Injective operators move elements: broadcast_to, reshape,
	// transpose, slice, concat.
	Injective
	// Reduce operators combine elements along axes.
	Reduce
	// Anchor operators (matmul, conv2d) are compute-heavy; they accept
	// fused element-wise epilogues.
	Anchor
	// Composite operators are decomposed into the others before fusion.
	Composite
)

var kindNames = [...]string{"elementwise", "injective", "reduce", "anchor", "composite"}

func (k Kind) String() string { return kindNames[k] }

// trivial reports whether k is fused by inlining (CINN's "trivial" ops).
func (k Kind) trivial() bool { return k == Elementwise || k == Injective }

// opInfo describes one operator.
type opInfo struct {
	kind     Kind
	min, max int      // number of inputs
	attrs    []string // the attributes it takes
	float    bool     // inputs must be floating point
}

// ops is the operator set. Element-wise ops broadcast their inputs by
// numpy's rules; reductions take axes (all when absent) and keepdims.
var ops = map[string]opInfo{
	// Element-wise unary.
	"neg":      {kind: Elementwise, min: 1, max: 1},
	"abs":      {kind: Elementwise, min: 1, max: 1},
	"relu":     {kind: Elementwise, min: 1, max: 1},
	"exp":      {kind: Elementwise, min: 1, max: 1, float: true},
	"log":      {kind: Elementwise, min: 1, max: 1, float: true},
	"sqrt":     {kind: Elementwise, min: 1, max: 1, float: true},
	"rsqrt":    {kind: Elementwise, min: 1, max: 1, float: true},
	"tanh":     {kind: Elementwise, min: 1, max: 1, float: true},
	"sigmoid":  {kind: Elementwise, min: 1, max: 1, float: true},
	"erf":      {kind: Elementwise, min: 1, max: 1, float: true},
	"cast":     {kind: Elementwise, min: 1, max: 1, attrs: []string{"dtype"}},
	"identity": {kind: Elementwise, min: 1, max: 1},
	"silu":     {kind: Elementwise, min: 1, max: 1, float: true},
	"softplus": {kind: Elementwise, min: 1, max: 1, float: true},
	"floor":    {kind: Elementwise, min: 1, max: 1, float: true},
	"ceil":     {kind: Elementwise, min: 1, max: 1, float: true},
	"round":    {kind: Elementwise, min: 1, max: 1, float: true},
	"sin":      {kind: Elementwise, min: 1, max: 1, float: true},
	"cos":      {kind: Elementwise, min: 1, max: 1, float: true},
	// Element-wise binary.
	"add": {kind: Elementwise, min: 2, max: 2},
	"sub": {kind: Elementwise, min: 2, max: 2},
	"mul": {kind: Elementwise, min: 2, max: 2},
	"div": {kind: Elementwise, min: 2, max: 2},
	"max": {kind: Elementwise, min: 2, max: 2},
	"min": {kind: Elementwise, min: 2, max: 2},
	"pow": {kind: Elementwise, min: 2, max: 2, float: true},
	// Comparisons (bool results) and where(condition, a, b).
	"equal":         {kind: Elementwise, min: 2, max: 2},
	"not_equal":     {kind: Elementwise, min: 2, max: 2},
	"less":          {kind: Elementwise, min: 2, max: 2},
	"less_equal":    {kind: Elementwise, min: 2, max: 2},
	"greater":       {kind: Elementwise, min: 2, max: 2},
	"greater_equal": {kind: Elementwise, min: 2, max: 2},
	"where":         {kind: Elementwise, min: 3, max: 3},
	"iota":          {kind: Elementwise, min: 1, max: 1, attrs: []string{"axis", "dtype"}},
	// Injective.
	"broadcast_to": {kind: Injective, min: 1, max: 1, attrs: []string{"shape"}},
	"reshape":      {kind: Injective, min: 1, max: 1, attrs: []string{"shape"}},
	"transpose":    {kind: Injective, min: 1, max: 1, attrs: []string{"perm"}},
	"slice":        {kind: Injective, min: 1, max: 1, attrs: []string{"axes", "starts", "ends", "steps"}},
	"concat":       {kind: Injective, min: 1, max: 64, attrs: []string{"axis"}},
	"pad":          {kind: Injective, min: 1, max: 1, attrs: []string{"pads", "value"}},
	"gather":       {kind: Injective, min: 2, max: 2, attrs: []string{"axis"}},
	// Reductions.
	"reduce_sum":  {kind: Reduce, min: 1, max: 1, attrs: []string{"axes", "keepdims"}},
	"reduce_mean": {kind: Reduce, min: 1, max: 1, attrs: []string{"axes", "keepdims"}, float: true},
	"reduce_max":  {kind: Reduce, min: 1, max: 1, attrs: []string{"axes", "keepdims"}},
	"reduce_min":  {kind: Reduce, min: 1, max: 1, attrs: []string{"axes", "keepdims"}},
	// Anchors.
	"matmul": {kind: Anchor, min: 2, max: 2, attrs: []string{"panel", "columns"}},
	"conv1d": {kind: Anchor, min: 2, max: 2, attrs: []string{"strides", "pads", "dilations", "groups", "layout", "panel"}},
	"conv2d": {kind: Anchor, min: 2, max: 2, attrs: []string{"strides", "pads", "dilations", "groups", "layout", "panel"}},
	"conv3d": {kind: Anchor, min: 2, max: 2, attrs: []string{"strides", "pads", "dilations", "groups", "layout", "panel"}},
	// Pooling: a window reduction per output element, an anchor like
	// the convolutions it follows.
	"max_pool2d": {kind: Anchor, min: 1, max: 1, attrs: []string{"kernel_shape", "strides", "pads", "dilations", "layout"}},
	"avg_pool2d": {kind: Anchor, min: 1, max: 1, attrs: []string{"kernel_shape", "strides", "pads", "count_include_pad", "layout"}, float: true},
	// Composites, decomposed by the decompose pass.
	"softmax":    {kind: Composite, min: 1, max: 1, attrs: []string{"axis"}, float: true},
	"layernorm":  {kind: Composite, min: 1, max: 3, attrs: []string{"axis", "epsilon"}, float: true},
	"rms_norm":   {kind: Composite, min: 1, max: 2, attrs: []string{"epsilon"}, float: true},
	"gelu":       {kind: Composite, min: 1, max: 1, attrs: []string{"approximate"}, float: true},
	"batch_norm": {kind: Composite, min: 5, max: 5, attrs: []string{"epsilon"}, float: true},
}

// KindOf returns the kind of the operator op.
func KindOf(op string) (Kind, bool) {
	info, ok := ops[op]
	return info.kind, ok
}

// unaryIntrinsic maps element-wise unary ops to ast intrinsics.
var unaryIntrinsic = map[string]ast.Intrinsic{
	"exp": ast.IntrinsicExp, "log": ast.IntrinsicLog, "sqrt": ast.IntrinsicSqrt,
	"rsqrt": ast.IntrinsicRsqrt, "tanh": ast.IntrinsicTanh, "sigmoid": ast.IntrinsicSigmoid,
	"erf": ast.IntrinsicErf, "abs": ast.IntrinsicAbs, "floor": ast.IntrinsicFloor,
	"ceil": ast.IntrinsicCeil, "sin": ast.IntrinsicSin, "cos": ast.IntrinsicCos,
}
