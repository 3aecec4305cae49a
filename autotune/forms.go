package autotune

import (
	"fmt"

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

// apply replays r on the form it was made for and returns the function it
// builds, under f's names. With adapt, r may have been made at other sizes
// or for another function of the same task (see BestAnySize): its
// decisions are fitted to these sizes, on whichever form its trace's
// names fit.
func (k *forms) apply(r *Record, adapt bool) (*ast.Func, error) {
	if adapt {
		s, err := Replay(k.f, r.Trace, schedule.AdaptDecisions())
		if err == nil || k.canonHash == k.hash {
			return funcOf(s, err)
		}
		g, cerr := funcOf(Replay(k.canon, r.Trace, schedule.AdaptDecisions()))
		if cerr != nil {
			return nil, err
		}
		return k.restore(g)
	}
	switch r.Workload {
	case k.hash:
		return funcOf(r.Schedule(k.f))
	case k.canonHash:
		g, err := funcOf(r.Schedule(k.canon))
		if err != nil {
			return nil, err
		}
		return k.restore(g)
	}
	return nil, fmt.Errorf("autotune: the record is for workload %.12s, not %s (%.12s)", r.Workload, k.f.Name, k.hash)
}

// restore gives a function scheduled from the canonical form f's names.
func (k *forms) restore(g *ast.Func) (*ast.Func, error) {
	out, err := ast.Rename(g, k.back)
	if err != nil {
		return nil, fmt.Errorf("autotune: a record of %s's structure under other names: %w", k.f.Name, err)
	}
	return out, nil
}

func funcOf(s *schedule.Schedule, err error) (*ast.Func, error) {
	if err != nil {
		return nil, err
	}
	return s.Func(), nil
}
