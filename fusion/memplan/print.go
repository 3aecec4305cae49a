package memplan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
)

// String prints the plan as a table: name, offset, size and live range,
// one line per buffer sorted by offset (then first step, then name), then
// "peak N bytes (naive M)".
func (p *Plan) String() string {
	places := slices.Clone(p.Places)
	slices.SortStableFunc(places, func(a, b Placement) int {
		return cmp.Or(cmp.Compare(a.Offset, b.Offset), cmp.Compare(a.First, b.First), strings.Compare(a.Name, b.Name))
	})
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "name\toffset\tsize\tlive")
	for _, q := range places {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d..%d\n", q.Name, q.Offset, q.Size, q.First, q.Last)
	}
	w.Flush()
	fmt.Fprintf(&sb, "peak %d bytes (naive %d)\n", p.Peak, p.Naive)
	return sb.String()
}
