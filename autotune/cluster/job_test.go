package cluster

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/internal/cacheflush"
)

func goodJob() Job {
	return Job{V: Version, Kind: KindMeasure, ID: "abc-0", Campaign: "c1", Target: "t", Func: rowsum,
		Trace: json.RawMessage(`{"insts":[]}`), Hash: "h", Attempts: 3}
}

// Decode refuses what is not a loom job of this version, with a reason.
func TestDecodeRefuses(t *testing.T) {
	edit := func(f func(j *Job)) []byte {
		j := goodJob()
		f(&j)
		data, _ := json.Marshal(j)
		return data
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"not json", []byte("\x7fELF\x02\x01"), "not a loom job"},
		{"unknown field", []byte(`{"v":1,"kind":"measure","binary":"AAAA"}`), "unknown field"},
		{"other version", edit(func(j *Job) { j.V = 2 }), "version 2"},
		{"other kind", edit(func(j *Job) { j.Kind = "exec" }), `kind "exec"`},
		{"no function", edit(func(j *Job) { j.Func = "" }), "without a function"},
		{"id with a dot", edit(func(j *Job) { j.ID = "a.b" }), "job id"},
		{"campaign with a dot", edit(func(j *Job) { j.Campaign = "a.b" }), "campaign"},
		{"no attempts", edit(func(j *Job) { j.Attempts = 0 }), "out of range"},
		{"vector bits", edit(func(j *Job) { j.Options.VectorBits = 96 }), "vector_bits"},
		{"cold parameter", edit(func(j *Job) { j.Cold = []int{0, -1} }), "cold parameters"},
		{"two documents", append(edit(func(*Job) {}), []byte(`{}`)...), "after the document"},
		{"too large", make([]byte, MaxPayload+1), "more than"},
	}
	for _, c := range cases {
		_, err := Decode(c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
	}
	if _, err := Decode(edit(func(*Job) {})); err != nil {
		t.Errorf("a good job: %v", err)
	}
}

// A job whose trace does not replay, or replays to another function than
// it names, fails with the reason and runs nothing.
func TestJobReplay(t *testing.T) {
	j := goodJob()
	if _, _, err := j.candidate(); err == nil || !strings.Contains(err.Error(), "replay gives function") {
		t.Errorf("a hash that does not match: %v", err)
	}
	j.Trace = json.RawMessage(`{"insts":[{"kind":"get_loops","inputs":["b9"],"outputs":["l1"]}]}`)
	if _, _, err := j.candidate(); err == nil {
		t.Error("a trace naming no loop replayed")
	}
	j.Func = "func f("
	if _, _, err := j.candidate(); err == nil || !strings.Contains(err.Error(), "function") {
		t.Errorf("a function that does not parse: %v", err)
	}
}

// TestColdJob: a model's weights travel with its measurement jobs. The
// job names the parameters to flush, its ID is not the warm job's, a
// build job carries none, and the worker's task flushes them, or the
// worker refuses the job where its CPU cannot flush; a position past the
// parameters is refused.
func TestColdJob(t *testing.T) {
	warmTask := rowsumTask(t)
	s, err := autotune.Default(warmTask.Func, autotune.HostTarget(1))
	if err != nil {
		t.Fatal(err)
	}
	cand := &autotune.Candidate{Sched: s, Func: s.Func(), Hash: ast.Hash(s.Func()).String()}
	c := &Client{o: ClientOptions{Campaign: "c1", Target: "t", Threads: 1, Attempts: 3}, counts: map[string]int{}}
	coldTask := *warmTask
	coldTask.Cold = []int{0}
	warm, err := c.job(KindMeasure, warmTask, cand, rowsum)
	if err != nil {
		t.Fatal(err)
	}
	cold, err := c.job(KindMeasure, &coldTask, cand, rowsum)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cold.Cold, []int{0}) || warm.Cold != nil || baseID(cold.ID) == baseID(warm.ID) {
		t.Errorf("cold job %s flushes %v, warm job %s flushes %v: want [0], none and two IDs", cold.ID, cold.Cold, warm.ID, warm.Cold)
	}
	if build, err := c.job(KindBuild, &coldTask, cand, rowsum); err != nil || build.Cold != nil {
		t.Errorf("a build job flushes %v (%v)", build.Cold, err)
	}
	data, err := json.Marshal(cold)
	if err != nil {
		t.Fatal(err)
	}
	j, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	task, _, err := j.candidate()
	switch {
	case !cacheflush.Supported:
		if err == nil || !strings.Contains(err.Error(), "no cache flush") {
			t.Errorf("a worker that cannot flush took a cold job: %v", err)
		}
	case err != nil:
		t.Fatal(err)
	case !slices.Equal(task.Cold, []int{0}):
		t.Errorf("the worker's task flushes %v, want [0]", task.Cold)
	}
	j.Cold = []int{2}
	if _, _, err := j.candidate(); err == nil || !strings.Contains(err.Error(), "cold parameter 2") {
		t.Errorf("a cold position past rowsum's two parameters: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	good, _ := json.Marshal(goodJob())
	f.Add(good)
	f.Add([]byte(`{"v":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := Decode(data)
		if err != nil {
			return
		}
		j.candidate() // must not panic
	})
}

func TestTargetName(t *testing.T) {
	if n, _ := TargetName("x86_64/icelake server.512"); n != "x86_64_icelake_server_512" {
		t.Errorf("got %q", n)
	}
	if _, err := TargetName(""); err == nil {
		t.Error("the empty name was taken")
	}
	if d := DefaultTarget(); !isToken(d) {
		t.Errorf("DefaultTarget %q is not a subject token", d)
	}
}
