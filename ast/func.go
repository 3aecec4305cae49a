package ast

// Func is a function: the unit loom schedules and compiles into one kernel.
//
// Sizes are the symbolic sizes, scalar integer parameters (S1, S2) that buffer
// shapes and loop extents may use and whose values are given at run time.
// Params are the buffer parameters in calling order; which are inputs and
// which outputs follows from what the body reads and writes.
//
// Text form:
//
//	func chain[S1: int32, S2: int32](X: float32[S1, S2, 1024], F: float32[S1, S2, 1024]) {
//	  ...
//	}
type Func struct {
	Name   string
	Sizes  []*Var
	Params []*Buffer
	Body   Stmt
}

// RootBlock is the name of the block that holds a function's whole body,
// as [Builder] writes it: the schedule primitives treat it as the nest's
// root, never as a computation.
const RootBlock = "root"

// Param returns the buffer parameter named name, or nil.
func (f *Func) Param(name string) *Buffer {
	for _, b := range f.Params {
		if b.Name == name {
			return b
		}
	}
	return nil
}

// Size returns the symbolic size named name, or nil.
func (f *Func) Size(name string) *Var {
	for _, v := range f.Sizes {
		if v.Name == name {
			return v
		}
	}
	return nil
}

// Block returns the schedule block named name, or nil.
func (f *Func) Block(name string) *ScheduleBlock {
	var found *ScheduleBlock
	Inspect(f.Body, func(n Node) bool {
		if b, ok := n.(*ScheduleBlock); ok && b.Name == name {
			found = b
		}
		return found == nil
	})
	return found
}

// Blocks returns the schedule blocks of f in the order the text form prints
// them (outer before inner, earlier before later).
func (f *Func) Blocks() []*ScheduleBlock {
	var blocks []*ScheduleBlock
	Inspect(f.Body, func(n Node) bool {
		if b, ok := n.(*ScheduleBlock); ok {
			blocks = append(blocks, b)
		}
		return true
	})
	return blocks
}

// String returns f in the text form.
func (f *Func) String() string { return Print(f) }
