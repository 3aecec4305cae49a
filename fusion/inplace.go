package fusion

import (
	"slices"

	"github.com/loom-go/loom/ast"
)

// markInPlace lets a kernel write an output into the memory of an input
// that nothing reads afterwards: a residual connection's add, whose
// convolution adds the block's input element by element and writes a
// tensor of the same shape. The kernel's function then updates the input
// in place (the output's stores go to it, R[e] = f(R[e], ...)), and the
// output becomes a name for that memory (Buffer.AliasOf), as a reshape's
// view is. A separate output costs its whole size again in traffic: the
// cache lines of a fresh buffer are read before they are written, so the
// add of a 3 MB residual after a 1x1 convolution cost a quarter of the
// convolution's time (ONNX Runtime's NCHWc convolutions sum into their
// residual's buffer the same way).
//
// The input must be an intermediate that kernels after this one do not
// read (through no view either), and the output an intermediate of the
// same type and shape; in the function, one block of spatial iteration
// variables only (no init: each element written once) must store the
// output, at its iteration variables, and read the input only at the same
// indices, which no other block touches. Every order of the block's
// instances then reads each element of the input before the one instance
// that overwrites it, which the schedule's dependence analysis sees too:
// the function says what it does.
func markInPlace(p *Plan, bufs map[*Tensor]*Buffer) {
	for i, k := range p.Kernels {
		if k.Alias != "" {
			continue
		}
		for oi, outName := range k.Outputs {
			out := bufs[p.Graph.Tensor(outName)]
			if out == nil || out.Role != RoleIntermediate || out.AliasOf != nil {
				continue
			}
			for ii, inName := range k.Inputs {
				in := bufs[p.Graph.Tensor(inName)]
				if in == nil {
					continue
				}
				root := in // the memory: a view's, or an earlier update's
				if in.AliasOf != nil {
					root = bufs[in.AliasOf]
				}
				if root.Role != RoleIntermediate || root.Last != i || sharesMemory(p, k, inName, root.Tensor) {
					continue
				}
				f, ok := updateInPlace(k.Func, inName, outName)
				if !ok {
					continue
				}
				k.Func = f
				k.Inputs = slices.Delete(slices.Clone(k.Inputs), ii, ii+1)
				k.Outputs = slices.Clone(k.Outputs)
				k.Outputs[oi] = inName
				for _, b := range p.Buffers {
					if b.AliasOf == out.Tensor {
						b.AliasOf = root.Tensor // views of the output
					}
				}
				out.AliasOf = root.Tensor
				root.Last = max(root.Last, out.Last)
				break
			}
		}
	}
}

// sharesMemory reports whether kernel k touches the memory of root through
// a tensor other than the one named except.
func sharesMemory(p *Plan, k *Kernel, except string, root *Tensor) bool {
	for _, name := range append(slices.Clone(k.Inputs), k.Outputs...) {
		if name == except {
			continue
		}
		if name == root.Name || slices.ContainsFunc(p.Buffers, func(b *Buffer) bool { return b.Tensor.Name == name && b.AliasOf == root }) {
			return true
		}
	}
	return false
}

// updateInPlace returns f with its parameter out replaced by its
// parameter in, where that is an update in place (see markInPlace); the
// parameters keep their order with in in out's place.
func updateInPlace(f *ast.Func, in, out string) (*ast.Func, bool) {
	pin, pout := f.Param(in), f.Param(out)
	if pin == nil || pout == nil || pin.DType != pout.DType || len(pin.Shape) != len(pout.Shape) {
		return nil, false
	}
	for d := range pin.Shape {
		if !ast.Equal(pin.Shape[d], pout.Shape[d]) {
			return nil, false
		}
	}
	var writer *ast.ScheduleBlock
	for _, b := range f.Blocks() {
		touchesIn := slices.ContainsFunc(append(slices.Clone(b.Reads), b.Writes...), func(r ast.Region) bool { return r.Buffer.Name == in })
		writesOut := slices.ContainsFunc(b.Writes, func(r ast.Region) bool { return r.Buffer.Name == out })
		switch {
		case writesOut && writer != nil:
			return nil, false // two writers
		case writesOut:
			writer = b
		case touchesIn:
			return nil, false // another block reads the input
		}
	}
	if writer == nil || writer.Init != nil || slices.ContainsFunc(writer.Writes, func(r ast.Region) bool { return r.Buffer.Name == in }) {
		return nil, false
	}
	// The one store of out, at the block's spatial variables, each once.
	var stores []*ast.Store
	ast.Inspect(writer.Body, func(n ast.Node) bool {
		if s, ok := n.(*ast.Store); ok && (s.Buffer.Name == out || s.Buffer.Name == in) {
			stores = append(stores, s)
		}
		return true
	})
	if len(stores) != 1 || stores[0].Buffer.Name != out || !distinctSpatial(writer, stores[0].Indices) {
		return nil, false
	}
	// Every load of in, anywhere in f, is the writer's, at the same indices.
	inWriter := map[*ast.Load]bool{}
	ast.Inspect(writer.Body, func(n ast.Node) bool {
		if l, ok := n.(*ast.Load); ok && l.Buffer.Name == in {
			inWriter[l] = true
		}
		return true
	})
	same := len(inWriter) > 0
	ast.Inspect(f.Body, func(n ast.Node) bool {
		if l, ok := n.(*ast.Load); ok && l.Buffer.Name == in {
			same = same && inWriter[l] && slices.EqualFunc(l.Indices, stores[0].Indices, func(a, b ast.Expr) bool { return ast.Equal(a, b) })
		}
		return true
	})
	if !same {
		return nil, false
	}
	g := ast.RebindBuffer(f, pout, pin)
	g.Params = slices.DeleteFunc(slices.Clone(g.Params), func(b *ast.Buffer) bool { return b == pin })
	g.Params[slices.Index(g.Params, pout)] = pin
	return g, true
}

// distinctSpatial reports whether idx are b's spatial iteration variables,
// each once and all of them: an index that names every instance of b
// once.
func distinctSpatial(b *ast.ScheduleBlock, idx []ast.Expr) bool {
	seen := map[string]bool{}
	for _, e := range idx {
		v, ok := e.(*ast.Var)
		if !ok || seen[v.Name] {
			return false
		}
		it := b.IterVarByName(v.Name)
		if it == nil || it.Kind != ast.Spatial {
			return false
		}
		seen[v.Name] = true
	}
	return len(seen) == len(b.Iters)
}
