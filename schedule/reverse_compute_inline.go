package schedule

import (
	"fmt"
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/poly"
)

// ReverseComputeInline removes block b, a consumer, and folds its
// computation into the block that produces what it reads: the producer then
// stores b's result directly. b must be element-wise (no reduction, one
// store) and load the produced buffer only at its own iteration variables,
// each once; the producer must be its buffer's only writer, not a
// reduction, and b its only reader. This is how an epilogue such as a ReLU
// joins the computation before it.
func (s *Schedule) ReverseComputeInline(b Block) error {
	const prim = "reverse_compute_inline"
	blk, bat, err := s.block(prim, b)
	if err != nil {
		return err
	}
	if err := leafAtRoot(prim, s.f, blk, bat); err != nil {
		return err
	}
	here := nodes(blk)
	st := singleStore(blk)
	switch {
	case blk.IsReduction() || blk.Init != nil:
		return illegal(prim, s.f, here, "block %s is a reduction; only element-wise blocks can be inlined", blk.Name)
	case st == nil:
		return illegal(prim, s.f, here, "the body of block %s is not a single store", blk.Name)
	case blk.Predicate != nil:
		// Found by the long run: the producer's nest runs the whole
		// domain, so the inlined store would write what the predicate
		// kept the block from writing.
		return illegal(prim, s.f, here, "block %s has a predicate: it writes only part of its domain, and inlined into its producer it would write all of it", blk.Name)
	}
	// The produced buffer: the one b reads that a single other block writes.
	var buf *ast.Buffer
	var producer *ast.ScheduleBlock
	for _, r := range blk.Reads {
		writers, _ := accessors(s.f, r.Buffer)
		if len(writers) == 1 && writers[0] != blk && !isParam(s.f, r.Buffer) {
			if buf != nil && buf != r.Buffer {
				return illegal(prim, s.f, here, "block %s reads two computed buffers, %s and %s; inline it into one producer only when it reads one", blk.Name, buf.Name, r.Buffer.Name)
			}
			buf, producer = r.Buffer, writers[0]
		}
	}
	if buf == nil {
		return illegal(prim, s.f, here, "block %s reads no temporary buffer that a single block produces", blk.Name)
	}
	pst := singleStore(producer)
	switch {
	case producer.IsReduction() || producer.Init != nil:
		return illegal(prim, s.f, nodes(blk, producer), "the producer %s is a reduction; its result is final only after the last reduce iteration (use reverse_compute_at instead)", producer.Name)
	case pst == nil || pst.Buffer != buf:
		return illegal(prim, s.f, nodes(producer), "the body of the producer %s is not a single store to %s", producer.Name, buf.Name)
	}
	if _, readers := accessors(s.f, buf); len(readers) != 1 {
		return illegal(prim, s.f, here, "%s has %d readers; block %s must be the only one", buf.Name, len(readers), blk.Name)
	}
	p, err := s.model()
	if err != nil {
		return illegal(prim, s.f, here, "cannot analyze the function: %v", err)
	}
	for _, d := range p.Deps() {
		if d.Kind == poly.WAR && d.Source.Block == blk && d.Sink.Block == producer && d.Buffer == buf {
			return illegal(prim, s.f, nodes(blk, producer), "block %s reads %s before block %s writes it, so it cannot take %s's values", blk.Name, buf.Name, producer.Name, producer.Name)
		}
	}
	loads := loadsOf(st.Value, buf)
	var perm []*ast.IterVar
	for i, l := range loads {
		p, ok := iterPermutation(blk, buf, l.Indices)
		if !ok || i > 0 && !ast.Equal(l, loads[0]) {
			return illegal(prim, s.f, []ast.Node{blk, l}, "block %s loads %s at indices that are not its iteration variables each once", blk.Name, buf.Name)
		}
		perm = p
	}
	// Other inputs of b must not change between the producer and b.
	for _, r := range blk.Reads {
		if r.Buffer == buf {
			continue
		}
		if writers, _ := accessors(s.f, r.Buffer); len(writers) > 0 {
			return illegal(prim, s.f, nodes(blk, writers[0]), "block %s also reads %s, which block %s writes; moving %s's computation to its producer could read it too early", blk.Name, r.Buffer.Name, writers[0].Name, blk.Name)
		}
	}
	// b's output must be b's alone up to b: another block that writes it
	// (the fill of a cache_write, which copies the old values in before
	// b runs) would overwrite the values moved to the producer, and one
	// that reads it before b would see them too early.
	writers, readers := accessors(s.f, st.Buffer)
	for _, w := range writers {
		if w != blk {
			return illegal(prim, s.f, nodes(blk, w), "block %s writes %s too; moved to the producer %s, block %s's values would be written before it", w.Name, st.Buffer.Name, producer.Name, blk.Name)
		}
	}
	blocks := s.f.Blocks()
	at := slices.Index(blocks, blk)
	for _, r := range readers {
		if r != blk && slices.Index(blocks, r) < at {
			return illegal(prim, s.f, nodes(blk, r), "block %s reads %s before block %s writes it; moved to the producer %s, the values would be there too early", r.Name, st.Buffer.Name, blk.Name, producer.Name)
		}
	}
	// b's iteration variable perm[d] is the producer's store index d.
	sub := permSubstitution(blk, perm, pst.Indices)
	value := mapLoads(st.Value, buf, func(*ast.Load) ast.Expr { return pst.Value })
	np := *producer
	np.Body = &ast.Store{Buffer: st.Buffer, Indices: substAll(st.Indices, sub), Value: ast.Substitute(value, sub)}
	np.Writes = substRegions(blk.Writes, sub)
	np.Reads = append([]ast.Region(nil), producer.Reads...)
	for _, r := range blk.Reads {
		if r.Buffer != buf {
			np.Reads = append(np.Reads, substRegions([]ast.Region{r}, sub)...)
		}
	}
	np.Reads = dedupRegions(np.Reads)
	g := replace(s.f, producer, &np)
	blk2, at2, _ := findBlock(g, blk.Name)
	g = removeBlock(g, blk2, at2)
	g = dropUnusedAlloc(g, buf)
	g = ast.SimplifyFunc(g)
	if !isParam(g, st.Buffer) {
		// The producer now writes b's output: its allocation must come
		// before the producer.
		g = allocBefore(g, st.Buffer, producer.Name)
		if err := ast.Verify(g); err != nil {
			return illegal(prim, s.f, nodes(blk, producer), "block %s writes %s, which is allocated where the producer %s cannot write it", blk.Name, st.Buffer.Name, producer.Name)
		}
	}
	if err := s.commit(prim, g); err != nil {
		return err
	}
	s.record(Inst{Kind: prim, Args: []Arg{Ref(b.rv)}})
	return nil
}

func substAll(es []ast.Expr, sub map[string]ast.Expr) []ast.Expr {
	out := make([]ast.Expr, len(es))
	for i, e := range es {
		out[i] = ast.Simplify(ast.Substitute(e, sub))
	}
	return out
}

func substRegions(rs []ast.Region, sub map[string]ast.Expr) []ast.Region {
	out := make([]ast.Region, len(rs))
	for i, r := range rs {
		nr := ast.Region{Buffer: r.Buffer}
		for _, rg := range r.Ranges {
			nr.Ranges = append(nr.Ranges, ast.Range{Min: ast.Simplify(ast.Substitute(rg.Min, sub)), Extent: ast.Simplify(ast.Substitute(rg.Extent, sub))})
		}
		out[i] = nr
	}
	return out
}

func init() {
	register("reverse_compute_inline", instKind{
		args: 1,
		replay: func(s *Schedule, args []any) error {
			b, err := argBlock(args[0])
			if err != nil {
				return err
			}
			return s.ReverseComputeInline(b)
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.ReverseComputeInline(%s)", args[0]) },
		outputs: "none",
	})
}

// allocBefore moves the allocation of buf, when it is a statement of the
// root sequence after the top-level statement holding block name, to just
// before that statement.
func allocBefore(f *ast.Func, buf *ast.Buffer, name string) *ast.Func {
	_, at, ok := findBlock(f, name)
	if !ok {
		return f
	}
	top, _ := topLevel(f, at)
	body := f.Body
	if root, isRoot := f.Body.(*ast.ScheduleBlock); isRoot {
		body = root.Body
	}
	seq, isSeq := body.(*ast.Seq)
	if !isSeq {
		return f
	}
	ti := slices.Index(seq.Stmts, top)
	ai := slices.IndexFunc(seq.Stmts, func(s ast.Stmt) bool { a, isAlloc := s.(*ast.Alloc); return isAlloc && a.Buffer == buf })
	if ti < 0 || ai < ti {
		return f
	}
	alloc := seq.Stmts[ai]
	return insertTop(replace(f, alloc, nil), top, false, alloc)
}
