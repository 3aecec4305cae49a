package schedule_test

import (
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// TestTraceRenamed: a schedule made on a function's canonical form
// (blocks, loops, derived loops and a cache of a buffer, each taken by
// name) replays, its trace renamed back, on the function under its own
// names, and builds the function the canonical schedule builds, renamed.
func TestTraceRenamed(t *testing.T) {
	f := workload.Matmul(8, 4, 6).Func // loops i, j, k; block C
	canon, back := ast.Canonical(f)
	fwd := func(kind map[string]string, name string) string {
		for c, own := range kind {
			if own == name {
				return c
			}
		}
		t.Fatalf("%s has no canonical name", name)
		return ""
	}
	s, err := schedule.New(canon)
	if err != nil {
		t.Fatal(err)
	}
	step := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("scheduling the canonical form: %v\n%s", err, ast.Print(s.Func()))
		}
	}
	b, err := s.GetBlock(fwd(back.Blocks, "C"))
	step(err)
	_, err = s.CacheRead(b, fwd(back.Buffers, "A"), "local")
	step(err)
	i, err := s.GetLoop(fwd(back.Vars, "i"))
	step(err)
	_, err = s.Split(i, 2, 4)
	step(err)
	inner, err := s.GetLoop(fwd(back.Vars, "i") + "_1")
	step(err)
	step(s.Vectorize(inner))

	trace := s.Trace().Renamed(back)
	for _, want := range []string{`"C"`, `"A"`, `"i_1"`} {
		if !strings.Contains(trace.String(), want) {
			t.Errorf("the renamed trace does not name %s:\n%s", want, trace)
		}
	}
	if strings.Contains(trace.String(), `"_`) {
		t.Errorf("the renamed trace still names a canonical identifier:\n%s", trace)
	}
	own, err := schedule.Replay(f, trace, nil)
	if err != nil {
		t.Fatalf("the renamed trace does not replay on %s: %v\n%s", f.Name, err, trace)
	}
	want, err := ast.Rename(s.Func(), back)
	if err != nil {
		t.Fatal(err)
	}
	if !ast.Equal(own.Func(), want) {
		t.Errorf("replayed under its own names:\n%s\nwant the canonical schedule renamed:\n%s", ast.Print(own.Func()), ast.Print(want))
	}
	if s.Trace().String() == trace.String() {
		t.Error("Renamed changed nothing")
	}
}
