package schedule

import (
	"fmt"

	"github.com/loom-go/loom/ast"
)

// CacheRead makes block b read buffer buf through a cache: a new buffer
// (named after buf and the scope, "A_shared") filled by a new block of that
// name, placed just before the top-level statement holding b, which copies
// the region b reads. b then reads the cache. Move the copy next to its
// use with ComputeAt. scope is "global", "shared" or "local".
//
// b must not write buf, and no other block in b's top-level statement may
// access it (the copy would be stale). CacheRead returns the copy block.
func (s *Schedule) CacheRead(b Block, buf, scope string) (Block, error) {
	const prim = "cache_read"
	blk, at, err := s.block(prim, b)
	if err != nil {
		return Block{}, err
	}
	here := nodes(blk)
	sc, ok := scopes[scope]
	if !ok {
		return Block{}, badArg(prim, s.f, here, "unknown scope %q (want global, shared or local)", scope)
	}
	src := findBuffer(blk, buf)
	if src == nil || !readsBuffer(blk, src) {
		return Block{}, badArg(prim, s.f, here, "block %s does not read a buffer named %q", blk.Name, buf)
	}
	for _, w := range blk.Writes {
		if w.Buffer == src {
			return Block{}, illegal(prim, s.f, here, "block %s also writes %s, so a cached copy would go stale", blk.Name, src.Name)
		}
	}
	top, _ := topLevel(s.f, at)
	if other := othersTouch(top, blk, src); other != nil {
		return Block{}, illegal(prim, s.f, nodes(blk, other), "block %s also accesses %s next to block %s, so a copy made before them could be stale", other.Name, src.Name, blk.Name)
	}
	p, err := s.model()
	if err != nil {
		return Block{}, illegal(prim, s.f, here, "cannot analyze the function: %v", err)
	}
	box, err := p.Footprint(blk.Name, src, false)
	if err != nil {
		return Block{}, illegal(prim, s.f, here, "%v", err)
	}
	used := names(s.f)
	cache := &ast.Buffer{Name: fresh(used, src.Name+"_"+scope), DType: src.DType, Shape: src.Shape, Scope: sc}
	blockName := fresh(blockNames(s.f), cache.Name)
	nest, ok := copyBlock(s.f, blockName, src, cache, box, used)
	if !ok {
		return Block{}, illegal(prim, s.f, here, "the region of %s that block %s reads has no bounds", src.Name, blk.Name)
	}
	g := replace(s.f, blk, replaceBuffer(blk, src, cache, true, false))
	_, at2, _ := findBlock(g, blk.Name)
	top2, _ := topLevel(g, at2)
	g = insertTop(g, top2, false, &ast.Alloc{Buffer: cache}, nest)
	g = ast.SimplifyFunc(g)
	if err := s.commit(prim, g); err != nil {
		return Block{}, err
	}
	out := s.blockHandle(blockName)
	s.record(Inst{Kind: prim, Args: []Arg{Ref(b.rv), Str(buf), Str(scope)}, Outputs: []string{out.rv}})
	return out, nil
}

func init() {
	register("cache_read", instKind{
		args: 3,
		replay: func(s *Schedule, args []any) error {
			b, err := argBlock(args[0])
			if err != nil {
				return err
			}
			buf, err := argString(args[1])
			if err != nil {
				return err
			}
			scope, err := argString(args[2])
			if err != nil {
				return err
			}
			_, err = s.CacheRead(b, buf, scope)
			return err
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.CacheRead(%s, %s, %s)", args[0], args[1], args[2]) },
		outputs: "one",
	})
}
