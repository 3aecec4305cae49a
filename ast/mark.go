package ast

import "strings"

// Mark returns n printed in the text form with the given nodes pointed out,
// for error messages. Every line is indented by two columns; a line where a
// marked statement starts begins with "> " instead, and a marked expression
// or declaration is underlined with carets on an extra line below its own.
// Nodes that do not occur in n are ignored.
//
//	  serial for (i, 0, 64) {
//	>   parallel for (k, 0, 64) {
//	      ScheduleBlock(C) {
//	        vi, vk = axis.bind(i, k)
//	                           ^
func Mark(n Node, marked ...Node) string {
	p := printer{spans: map[Node][]span{}}
	p.node(n)
	lines := strings.Split(strings.TrimSuffix(p.buf.String(), "\n"), "\n")

	stmtLines := map[int]bool{}
	underlines := map[int][]span{}
	for _, m := range marked {
		if m == nil || isNilNode(m) {
			continue
		}
		for _, sp := range p.spans[m] {
			if sp.stmt {
				stmtLines[sp.line] = true
			} else {
				underlines[sp.line] = append(underlines[sp.line], sp)
			}
		}
	}

	var out strings.Builder
	for i, line := range lines {
		if stmtLines[i] {
			out.WriteString("> ")
		} else {
			out.WriteString("  ")
		}
		out.WriteString(line)
		out.WriteByte('\n')
		if sps := underlines[i]; len(sps) > 0 {
			carets := []byte(strings.Repeat(" ", len(line)))
			for _, sp := range sps {
				for c := sp.col; c < sp.end && c < len(carets); c++ {
					carets[c] = '^'
				}
			}
			out.WriteString("  ")
			out.WriteString(strings.TrimRight(string(carets), " "))
			out.WriteByte('\n')
		}
	}
	return out.String()
}
