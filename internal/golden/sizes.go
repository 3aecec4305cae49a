package golden

import (
	"fmt"
	"strconv"
	"strings"
)

// Sizes parses a sizes section: one binding of the symbols a line, as
// NAME=VALUE fields ("B=2 T=3"). An empty line binds none.
func Sizes(text string) ([]map[string]int64, error) {
	var out []map[string]int64
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		m := map[string]int64{}
		for _, field := range strings.Fields(line) {
			name, v, ok := strings.Cut(field, "=")
			n, err := strconv.ParseInt(v, 10, 64)
			if !ok || err != nil {
				return nil, fmt.Errorf("bad sizes line %q: want NAME=VALUE fields", line)
			}
			m[name] = n
		}
		out = append(out, m)
	}
	return out, nil
}
