package schedule

import "github.com/loom-go/loom/ast"

// Tile splits each loop of a perfect nest by the matching inner tile size,
// then orders the loops with all the outer (tile) loops first: tiling
// loops i, j by 32, 8 gives i_0, j_0, i_1, j_1 with i_1 of 32 and j_1 of 8.
// It is sugar over Split and Reorder, and the trace records those. The
// reorder is refused when the band is not permutable.
func (s *Schedule) Tile(loops []Loop, tiles []int) ([]Loop, error) {
	if len(loops) != len(tiles) || len(loops) == 0 {
		return nil, badArg("tile", s.f, nil, "%d loops but %d tile sizes", len(loops), len(tiles))
	}
	saved := s.save()
	var outer, inner []Loop
	for i, l := range loops {
		parts, err := s.Split(l, -1, tiles[i])
		if err != nil {
			s.restore(saved)
			return nil, err
		}
		outer, inner = append(outer, parts[0]), append(inner, parts[1])
	}
	order := append(append([]Loop(nil), outer...), inner...)
	if err := s.Reorder(order...); err != nil {
		s.restore(saved)
		return nil, err
	}
	return order, nil
}

// state is what save keeps to undo a failed composite primitive.
type state struct {
	f     *ast.Func
	insts int
	nrv   int
}

func (s *Schedule) save() state { return state{f: s.f, insts: len(s.trace.Insts), nrv: s.nrv} }

func (s *Schedule) restore(st state) {
	s.f = st.f
	s.trace.Insts = s.trace.Insts[:st.insts]
	s.nrv = st.nrv
}
