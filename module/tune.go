package module

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/fusion"
)

// Tune tunes the kernels of g on this machine as one model, at sizes
// (a value for each of its symbols): its distinct kernels are the tasks,
// weighted by how often g runs each, tuned within o.Budget or o.Trials
// by the task scheduler (autotune.TuneModel) with loom tune's defaults
// otherwise. The records go to o.DB (loom's default database when
// empty), and a stopped Tune called again continues from them. Compile
// with Options.Database opened on that file, and the same Threads, runs
// the tuned kernels.
//
// The measurements run in worker processes that are this program
// started again; autotune's initialization serves them before main (see
// autotune.WorkerEnv), so a program needs no code of its own for it.
func Tune(ctx context.Context, g *fusion.Graph, sizes map[string]int64, o autotune.LocalOptions) (*autotune.ModelResult, error) {
	if o.Threads <= 0 {
		o.Threads = 1 // Compile's default
	}
	var missing []string
	for _, s := range g.Symbols() {
		if _, ok := sizes[s]; !ok {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("module: tune %s: give a size to %s", g.Name, strings.Join(missing, ", "))
	}
	plan, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		return nil, err
	}
	l, err := autotune.NewLocal(o)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	var tasks []*autotune.Task
	for _, k := range plan.Kernels {
		ks := map[string]int64{}
		for _, s := range k.Func.Sizes {
			ks[s.Name] = sizes[s.Name]
		}
		task := l.Task(k.Name, k.Func, ks)
		task.SetCold(plan.Weights(k)) // timed as the model runs it
		tasks = append(tasks, task)
	}
	return l.TuneModel(ctx, autotune.DistinctTasks(tasks))
}
