package schedule

import (
	"slices"

	"github.com/loom-go/loom/ast"
)

// nameArgs lists, for each kind of instruction that refers to a function's
// identifiers by name, which of its arguments are names and of what: a
// block (get_block), a loop variable (get_loop) or a buffer (the caching
// and layout primitives). Every other argument (annotation keys, thread
// axes, storage scopes, layouts, intrinsics, types) names no identifier of
// the function.
var nameArgs = map[string]map[int]func(*ast.Renaming, string) string{
	"get_block":               {0: (*ast.Renaming).Block},
	"get_loop":                {0: (*ast.Renaming).Var},
	"cache_read":              {1: (*ast.Renaming).Buffer},
	"cache_write":             {1: (*ast.Renaming).Buffer},
	"accumulate":              {1: (*ast.Renaming).Buffer},
	"set_scope":               {1: (*ast.Renaming).Buffer},
	"transform_layout":        {1: (*ast.Renaming).Buffer},
	"transform_layout_padded": {1: (*ast.Renaming).Buffer},
}

// Renamed returns a copy of t whose instructions refer to the function's
// blocks, loops and buffers by their names under r (ast.Rename): made on
// a function f, it replays on ast.Rename(f, r) as t does on f. With
// r.Derived, the names primitives derive (a split's i_o, a cache's
// A_local) follow the names they derive from, as the function's do. It
// is how a record of a function's canonical form (ast.Canonical) is
// replayed on the function under its own names.
func (t *Trace) Renamed(r *ast.Renaming) *Trace {
	out := &Trace{Insts: make([]Inst, len(t.Insts))}
	for i, in := range t.Insts {
		out.Insts[i] = in
		names := nameArgs[in.Kind]
		if names == nil {
			continue
		}
		out.Insts[i].Args = slices.Clone(in.Args)
		for pos, rename := range names {
			if pos < len(in.Args) && in.Args[pos].Str != nil {
				name := rename(r, *in.Args[pos].Str)
				out.Insts[i].Args[pos].Str = &name
			}
		}
	}
	return out
}
