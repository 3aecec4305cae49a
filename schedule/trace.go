package schedule

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/loom-go/loom/ast"
)

// Trace is the record of a schedule: every primitive and sampling decision,
// in order. It is SSA over random variables: each instruction names its
// outputs (blocks b0, loops l1, sampled values v2) and later instructions
// refer to them, so that replaying with an edited sampling decision changes
// every primitive that used the value. Blocks and loops enter a trace by
// name (get_block("C"), get_loop("i")) or by position (get_loops(b0)), so a
// trace replays on any function structurally equal to the one it was made
// on.
type Trace struct {
	Insts []Inst `json:"insts"`
}

// Inst is one instruction of a trace.
type Inst struct {
	Kind     string   `json:"kind"`
	Args     []Arg    `json:"args,omitempty"`
	Outputs  []string `json:"outputs,omitempty"`
	Decision []int64  `json:"decision,omitempty"` // sampling instructions only
}

// Arg is one argument of an instruction: a reference to a random variable,
// or a literal integer, float, string, bool or list.
type Arg struct {
	RV     string
	Int    *int64
	Float  *float64
	Str    *string
	Bool   *bool
	List   []Arg
	IsList bool
}

// Ref returns an argument referring to the random variable named rv.
func Ref(rv string) Arg { return Arg{RV: rv} }

// IntArg returns a literal integer argument.
func IntArg(v int64) Arg { return Arg{Int: &v} }

// Str returns a literal string argument.
func Str(s string) Arg { return Arg{Str: &s} }

// ListArg returns a list argument.
func ListArg(xs ...Arg) Arg { return Arg{List: xs, IsList: true} }

// MarshalJSON writes a reference as {"rv": "l1"}, an integer as a JSON
// number, a float as {"float": 1.5}, a string, a bool or a list as
// themselves.
func (a Arg) MarshalJSON() ([]byte, error) {
	switch {
	case a.RV != "":
		return json.Marshal(map[string]string{"rv": a.RV})
	case a.Int != nil:
		return json.Marshal(*a.Int)
	case a.Float != nil:
		return json.Marshal(map[string]float64{"float": *a.Float})
	case a.Str != nil:
		return json.Marshal(*a.Str)
	case a.Bool != nil:
		return json.Marshal(*a.Bool)
	case a.IsList:
		if a.List == nil {
			return []byte("[]"), nil
		}
		return json.Marshal(a.List)
	}
	return nil, fmt.Errorf("schedule: empty trace argument")
}

// UnmarshalJSON reads what MarshalJSON writes.
func (a *Arg) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return fmt.Errorf("schedule: empty trace argument")
	}
	*a = Arg{}
	switch b[0] {
	case '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		if rv, ok := m["rv"]; ok {
			return json.Unmarshal(rv, &a.RV)
		}
		if f, ok := m["float"]; ok {
			var v float64
			if err := json.Unmarshal(f, &v); err != nil {
				return err
			}
			a.Float = &v
			return nil
		}
		return fmt.Errorf("schedule: trace argument %s is neither {\"rv\": ...} nor {\"float\": ...}", b)
	case '[':
		a.IsList = true
		return json.Unmarshal(b, &a.List)
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		a.Str = &s
		return nil
	case 't', 'f':
		var v bool
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		a.Bool = &v
		return nil
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("schedule: trace argument %s is not an integer", b)
	}
	a.Int = &v
	return nil
}

// MarshalJSON writes the trace as {"insts": [...]}.
func (t *Trace) MarshalJSON() ([]byte, error) {
	type plain Trace
	if t.Insts == nil {
		return json.Marshal(plain{Insts: []Inst{}})
	}
	return json.Marshal((*plain)(t))
}

// ParseTrace reads a trace from its JSON form.
func ParseTrace(data []byte) (*Trace, error) {
	var t Trace
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("schedule: trace%s: %w", jsonPlace(data, err), err)
	}
	if dec.More() {
		return nil, fmt.Errorf("schedule: trace: trailing data after the trace")
	}
	return &t, nil
}

// jsonPlace returns " at LINE:COLUMN" for a JSON error that tells its
// offset in data, else "".
func jsonPlace(data []byte, err error) string {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	}
	if off < 0 {
		return ""
	}
	before := data[:min(int(off), len(data))]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf(" at %d:%d", line, col)
}

// instKind describes how an instruction replays and prints as Go.
type instKind struct {
	// args is the number of arguments, or -1 for any number (at least one).
	args int
	// replay applies the instruction to s with its arguments resolved.
	replay func(s *Schedule, args []any) error
	// goCall returns the Go call (without the outputs) for the arguments
	// already printed as Go expressions.
	goCall func(args []string) string
	// goTyped, when set, is goCall for an instruction whose Go call
	// depends on what its arguments are: kinds[i] is 'b' for a block,
	// 'l' for a loop, 'v' for a sampled value and 0 for a literal.
	goTyped func(args []string, kinds []byte) string
	// goDecided, for a sampling instruction, returns the Go call that
	// takes the recorded decision instead of drawing one ("" when the
	// decision does not fit the instruction: goCall's draw is printed).
	goDecided func(args []string, decision []int64) string
	// outputs says how the outputs bind in Go: "one", "list", "none", or
	// "plain" for a call that returns nothing, not even an error.
	outputs string
}

var instKinds = map[string]instKind{}

func register(kind string, k instKind) { instKinds[kind] = k }

// ReplayError is the failure of one instruction of a replayed trace.
type ReplayError struct {
	Index int    // the instruction's index in the trace
	Kind  string // the instruction's kind
	Err   error  // why it failed (often an *Error)
}

// Error names the instruction and why it failed.
func (e *ReplayError) Error() string {
	return fmt.Sprintf("schedule: replay: instruction %d (%s): %s", e.Index, e.Kind, strings.TrimPrefix(e.Err.Error(), "schedule: "))
}

// Unwrap returns the instruction's error.
func (e *ReplayError) Unwrap() error { return e.Err }

// Replay applies trace t to a new schedule of f and returns it. decisions,
// if not nil, replace the decisions of sampling instructions (by index in
// t.Insts); a replaced decision must still be valid for its instruction.
// The result has the same trace, with the new decisions; the primitives
// applied to it next name their outputs after the trace's (b0, l1, ...:
// the next number after the highest).
func Replay(f *ast.Func, t *Trace, decisions map[int][]int64, opts ...Option) (*Schedule, error) {
	s, err := New(f, opts...)
	if err != nil {
		return nil, err
	}
	for i, in := range t.Insts {
		d, replaced := decisions[i]
		if err := s.replayInst(i, in, d, replaced); err != nil {
			return nil, err
		}
	}
	// Primitives applied after the replay name their outputs after the
	// trace's, as they would after the calls that made it.
	for _, in := range s.trace.Insts {
		for _, o := range in.Outputs {
			if n, err := strconv.Atoi(strings.TrimLeft(o, "abcdefghijklmnopqrstuvwxyz")); err == nil && n >= s.nrv {
				s.nrv = n + 1
			}
		}
	}
	return s, nil
}

// replayInst applies instruction i of a trace, in, to s; decision
// replaces its recorded decision when replaced is true.
func (s *Schedule) replayInst(i int, in Inst, decision []int64, replaced bool) error {
	k, ok := instKinds[in.Kind]
	if !ok {
		return fmt.Errorf("schedule: replay: instruction %d: unknown kind %q", i, in.Kind)
	}
	if k.args >= 0 && len(in.Args) != k.args || k.args < 0 && len(in.Args) == 0 {
		return fmt.Errorf("schedule: replay: instruction %d: %s takes %d arguments, not %d", i, in.Kind, max(k.args, 1), len(in.Args))
	}
	args := make([]any, len(in.Args))
	for j, a := range in.Args {
		v, err := resolveArg(s.handles, a)
		if err != nil {
			return fmt.Errorf("schedule: replay: instruction %d (%s): %w", i, in.Kind, err)
		}
		args[j] = v
	}
	s.replaying, s.replayOutputs, s.replayDecision = true, append([]string(nil), in.Outputs...), in.Decision
	if replaced {
		s.replayDecision = decision
	}
	before := len(s.trace.Insts)
	err := k.replay(s, args)
	unused := len(s.replayOutputs)
	s.replaying, s.replayOutputs, s.replayDecision = false, nil, nil
	if err != nil {
		return &ReplayError{Index: i, Kind: in.Kind, Err: err}
	}
	// A trace whose instruction names more or fewer outputs than it
	// makes now (get_loops of a block with another nest) would bind
	// its later arguments to the wrong loops.
	if made := len(s.trace.Insts); made > before && len(in.Outputs) > 0 {
		if n := len(s.trace.Insts[made-1].Outputs); unused > 0 || n != len(in.Outputs) {
			return &ReplayError{Index: i, Kind: in.Kind, Err: fmt.Errorf("it makes %d outputs now, but the trace names %d (%s)", n, len(in.Outputs), strings.Join(in.Outputs, ", "))}
		}
	}
	return nil
}

func resolveArg(handles map[string]any, a Arg) (any, error) {
	switch {
	case a.RV != "":
		h, ok := handles[a.RV]
		if !ok {
			return nil, fmt.Errorf("random variable %s is not defined before its use", a.RV)
		}
		return h, nil
	case a.Int != nil:
		return *a.Int, nil
	case a.Float != nil:
		return *a.Float, nil
	case a.Str != nil:
		return *a.Str, nil
	case a.Bool != nil:
		return *a.Bool, nil
	case a.IsList:
		out := make([]any, len(a.List))
		for i, x := range a.List {
			v, err := resolveArg(handles, x)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("empty argument")
}

// Go returns the trace as a Go function that rebuilds the schedule, given
// a new schedule of the function the trace was made on:
//
//	func apply(sch *schedule.Schedule) error {
//		C, err := sch.GetBlock("C")
//		if err != nil {
//			return err
//		}
//		...
//	}
//
// A sampling instruction with a decision prints as the primitive's With
// form, which takes that decision (sch.SamplePerfectTileWith(l1, 2, 16,
// []int64{8, 4})); one without prints as a draw. So the function applies
// exactly the trace's instructions and decisions: the schedule it makes
// has the same function and the same trace as Replay(f, t, nil). An
// output nothing uses is not named (_). For the shortest Go, print the
// Simplified trace.
func (t *Trace) Go() string {
	used := map[string]bool{}
	for _, in := range t.Insts {
		markUsed(in.Args, used)
	}
	taken := map[string]bool{"sch": true, "err": true}
	for _, in := range t.Insts {
		for _, o := range in.Outputs {
			taken[o] = true
		}
	}
	listName := func(in Inst) string {
		base := "outs"
		switch {
		case in.Kind == "get_loops" && len(in.Args) > 0 && in.Args[0].RV != "":
			base = "loops_" + in.Args[0].RV
		case in.Kind == "split" && len(in.Args) > 0 && in.Args[0].RV != "":
			base = "split_" + in.Args[0].RV
		case in.Kind == "sample_perfect_tile" && len(in.Args) > 0 && in.Args[0].RV != "":
			base = "tiles_" + in.Args[0].RV
		}
		name := base
		for n := 2; taken[name]; n++ {
			name = fmt.Sprintf("%s_%d", base, n)
		}
		taken[name] = true
		return name
	}
	var b strings.Builder
	b.WriteString("func apply(sch *schedule.Schedule) error {\n")
	kinds := map[string]byte{} // of the variables defined so far
	for _, in := range t.Insts {
		k, ok := instKinds[in.Kind]
		if !ok {
			fmt.Fprintf(&b, "\t// unknown instruction %s\n", in.Kind)
			continue
		}
		args := make([]string, len(in.Args))
		for i, a := range in.Args {
			args[i] = goArg(a)
		}
		call := ""
		if in.Decision != nil && k.goDecided != nil {
			call = k.goDecided(args, in.Decision)
		}
		if call == "" && k.goTyped != nil {
			call = k.goTyped(args, argKinds(in.Args, kinds))
		}
		if call == "" {
			call = k.goCall(args)
		}
		for j, o := range in.Outputs {
			kinds[o] = outputKind(in.Kind, j)
		}
		if !anyUsed(in.Outputs, used) && k.outputs != "plain" {
			fmt.Fprintf(&b, "\tif %s := %s; err != nil {\n\t\treturn err\n\t}\n", discard(k.outputs, len(in.Outputs)), call)
			continue
		}
		switch {
		case k.outputs == "plain":
			fmt.Fprintf(&b, "\t%s\n", call)
			continue
		case k.outputs == "list":
			name := listName(in)
			fmt.Fprintf(&b, "\t%s, err := %s\n\tif err != nil {\n\t\treturn err\n\t}\n", name, call)
			var lhs, rhs []string
			for i, o := range in.Outputs {
				if used[o] {
					lhs = append(lhs, o)
					rhs = append(rhs, fmt.Sprintf("%s[%d]", name, i))
				}
			}
			fmt.Fprintf(&b, "\t%s := %s\n", strings.Join(lhs, ", "), strings.Join(rhs, ", "))
		default:
			fmt.Fprintf(&b, "\t%s, err := %s\n\tif err != nil {\n\t\treturn err\n\t}\n", in.Outputs[0], call)
		}
	}
	b.WriteString("\treturn nil\n}\n")
	return b.String()
}

// discard is the left side of a call whose outputs nothing uses.
func discard(outputs string, n int) string {
	if outputs == "none" || n == 0 {
		return "err"
	}
	return "_, err"
}

// outputKind is what output j of an instruction of kind kind is: 'b' a
// block, 'v' a sampled value, 'l' a loop.
func outputKind(kind string, j int) byte {
	switch kind {
	case "get_block", "blockize", "rfactor", "decompose_reduction", "cache_read", "cache_write", "accumulate":
		return 'b'
	case "sample_categorical", "sample_perfect_tile":
		return 'v'
	}
	return 'l'
}

// argKinds returns the kind of each argument (goTyped's kinds): a list's
// is its first element's.
func argKinds(args []Arg, kinds map[string]byte) []byte {
	out := make([]byte, len(args))
	for i, a := range args {
		switch {
		case a.RV != "":
			out[i] = kinds[a.RV]
		case a.IsList:
			for _, x := range a.List {
				if x.RV != "" && kinds[x.RV] == 'v' {
					out[i] = 'v' // a list with a sampled value
				}
			}
		}
	}
	return out
}

// goInts prints a decision as a Go slice literal.
func goInts(d []int64) string {
	parts := make([]string, len(d))
	for i, x := range d {
		parts[i] = strconv.FormatInt(x, 10)
	}
	return "[]int64{" + strings.Join(parts, ", ") + "}"
}

// goArg prints an argument as a Go expression.
func goArg(a Arg) string {
	switch {
	case a.RV != "":
		return a.RV
	case a.Int != nil:
		return strconv.FormatInt(*a.Int, 10)
	case a.Float != nil:
		s := strconv.FormatFloat(*a.Float, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eIN") {
			s += ".0"
		}
		return s
	case a.Str != nil:
		return strconv.Quote(*a.Str)
	case a.Bool != nil:
		return strconv.FormatBool(*a.Bool)
	case a.IsList:
		parts := make([]string, len(a.List))
		for i, x := range a.List {
			parts[i] = goArg(x)
		}
		return strings.Join(parts, ", ")
	}
	return "nil"
}

// String returns the trace one instruction per line, in the style of
// TVM's printed traces:
//
//	b0 = get_block("C")
//	l1, l2, l3 = get_loops(b0)
//	l4, l5 = split(l1, [32, -1])
func (t *Trace) String() string {
	var b strings.Builder
	for _, in := range t.Insts {
		b.WriteString(in.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// String returns the instruction in the text form of traces (one line of
// Trace.String).
func (in Inst) String() string {
	var b strings.Builder
	if len(in.Outputs) > 0 {
		b.WriteString(strings.Join(in.Outputs, ", ") + " = ")
	}
	args := make([]string, len(in.Args))
	for i, a := range in.Args {
		args[i] = textArg(a)
	}
	b.WriteString(in.Kind + "(" + strings.Join(args, ", ") + ")")
	if in.Decision != nil {
		ds := make([]string, len(in.Decision))
		for i, d := range in.Decision {
			ds[i] = strconv.FormatInt(d, 10)
		}
		b.WriteString(" decision=[" + strings.Join(ds, ", ") + "]")
	}
	return b.String()
}

func textArg(a Arg) string {
	if a.IsList {
		parts := make([]string, len(a.List))
		for i, x := range a.List {
			parts[i] = textArg(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return goArg(a)
}

// EnterPostproc marks the end of what was decided in the trace
// (MetaSchedule's enter_postproc): the instructions after it are
// post-processing, derived from the function the decisions made (the
// autotuner's Finish applies its sampled unroll limits and vector widths
// there). A trace replayed with other decisions must recompute them
// rather than repeat them: Trace.WithoutPostproc drops them. The mark
// changes nothing in the function.
func (s *Schedule) EnterPostproc() { s.record(Inst{Kind: postprocKind}) }

// postprocKind is the instruction EnterPostproc records.
const postprocKind = "enter_postproc"

// WithoutPostproc returns the instructions of t before its first
// enter_postproc mark (see EnterPostproc): all of them, in a copy, when it
// has none.
func (t *Trace) WithoutPostproc() *Trace {
	n := len(t.Insts)
	for i, in := range t.Insts {
		if in.Kind == postprocKind {
			n = i
			break
		}
	}
	return &Trace{Insts: slices.Clone(t.Insts[:n])}
}

// HasPostproc reports whether t has an enter_postproc mark.
func (t *Trace) HasPostproc() bool {
	return slices.ContainsFunc(t.Insts, func(in Inst) bool { return in.Kind == postprocKind })
}

func init() {
	register(postprocKind, instKind{
		args:    0,
		replay:  func(s *Schedule, _ []any) error { s.EnterPostproc(); return nil },
		goCall:  func([]string) string { return "sch.EnterPostproc()" },
		outputs: "plain",
	})
}

// Helpers for replay functions: convert resolved arguments.

func argBlock(x any) (Block, error) {
	if b, ok := x.(Block); ok {
		return b, nil
	}
	return Block{}, fmt.Errorf("want a block, got %T", x)
}

func argLoop(x any) (Loop, error) {
	if l, ok := x.(Loop); ok {
		return l, nil
	}
	return Loop{}, fmt.Errorf("want a loop, got %T", x)
}

func argInt(x any) (int64, error) {
	switch v := x.(type) {
	case int64:
		return v, nil
	case Value:
		return v.v, nil
	}
	return 0, fmt.Errorf("want an integer, got %T", x)
}

func argString(x any) (string, error) {
	if s, ok := x.(string); ok {
		return s, nil
	}
	return "", fmt.Errorf("want a string, got %T", x)
}

func argList(x any) ([]any, error) {
	if l, ok := x.([]any); ok {
		return l, nil
	}
	return nil, fmt.Errorf("want a list, got %T", x)
}

func argLoops(args []any) ([]Loop, error) {
	ls := make([]Loop, len(args))
	for i, a := range args {
		l, err := argLoop(a)
		if err != nil {
			return nil, err
		}
		ls[i] = l
	}
	return ls, nil
}
