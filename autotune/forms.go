package autotune

import (
	"fmt"
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// A record is made for a function under the names it was tuned with:
// the function itself, or its canonical form (ast.Canonical), which a
// model's tuning tunes (DistinctTasks) so that one record serves every
// kernel of that structure whatever its names (the twelve layers of a
// transformer, named after their layers, are one task). forms holds both
// forms of a function, so that a lookup finds the records of either and
// a record of the canonical form builds a function under f's names.
type forms struct {
	f, canon        *ast.Func
	hash, canonHash string
	back            *ast.Renaming // canonical names -> f's
}

func formsOf(f *ast.Func) *forms {
	canon, back := ast.Canonical(f)
	return &forms{f: f, canon: canon, hash: ast.Hash(f).String(), canonHash: ast.Hash(canon).String(), back: back}
}

// CanonicalWorkload is the workload (ast.Hash) of f's canonical form:
// what the records of a model's tuning are filed under.
func CanonicalWorkload(f *ast.Func) string { return formsOf(f).canonHash }

// is reports whether a record of workload w is one of f's.
func (k *forms) is(w string) bool { return w == k.hash || w == k.canonHash }

// eligible returns the eligible records (see eligible) of either form on
// target, f's own first.
func (k *forms) eligible(recs []*Record, target string) []*Record {
	out := eligible(recs, k.hash, target)
	if k.canonHash != k.hash {
		out = append(out, eligible(recs, k.canonHash, target)...)
	}
	return out
}

// apply replays r on f and returns the function it builds (see
// schedule).
func (k *forms) apply(r *Record, adapt bool) (*ast.Func, error) {
	return funcOf(k.schedule(r, adapt))
}

// schedule replays r on f, under f's names: a record of the canonical
// form with its trace renamed. With adapt, r may have been made at other
// sizes or for another function of the same task (see BestAnySize): its
// decisions are fitted to these sizes, and its trace names that
// function's identifiers or its canonical form's, whichever replays.
func (k *forms) schedule(r *Record, adapt bool, opts ...schedule.Option) (*schedule.Schedule, error) {
	switch {
	case r.Workload == k.hash && !adapt:
		return Replay(k.f, r.Trace, opts...)
	case r.Workload == k.canonHash && !adapt:
		return k.renamed(r.Trace, false, opts...)
	case !adapt:
		return nil, fmt.Errorf("autotune: the record is for workload %.12s, not %s (%.12s)", r.Workload, k.f.Name, k.hash)
	}
	s, err := Replay(k.f, r.Trace, append(slices.Clone(opts), schedule.AdaptDecisions())...)
	if err != nil && k.canonHash != k.hash {
		if c, cerr := k.renamed(r.Trace, true, opts...); cerr == nil {
			return c, nil
		}
	}
	return s, err
}

// renamed replays a trace made on the canonical form on f, renamed to f's
// names (with adapt, its decisions fitted to f's sizes), and checks that it built what it builds on the canonical form:
// a name a primitive derives (a cache's A_local, a split's i_0) may be
// one f already uses, and the renamed trace would then take that block or
// loop instead of the derived one. Renaming the scheduled canonical form
// back would give two identifiers one name there; either way the record
// does not serve f.
func (k *forms) renamed(t *schedule.Trace, adapt bool, opts ...schedule.Option) (*schedule.Schedule, error) {
	var check []schedule.Option // not opts: their hooks see f's replay only
	if adapt {
		opts = append(slices.Clone(opts), schedule.AdaptDecisions())
		check = append(check, schedule.AdaptDecisions())
	}
	s, err := Replay(k.f, t.Renamed(k.back), opts...)
	if err != nil {
		return nil, err
	}
	c, err := Replay(k.canon, t, check...)
	if err != nil {
		return nil, err
	}
	own, _ := ast.Canonical(s.Func())
	want, _ := ast.Canonical(c.Func())
	if !ast.Equal(own, want) {
		return nil, fmt.Errorf("autotune: a record of %s's structure under other names builds another function under %s's names (a name it derives is taken there)", k.f.Name, k.f.Name)
	}
	return s, nil
}

func funcOf(s *schedule.Schedule, err error) (*ast.Func, error) {
	if err != nil {
		return nil, err
	}
	return s.Func(), nil
}
