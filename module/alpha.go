package module

import (
	"strconv"
	"strings"

	"github.com/loom-go/loom/ast"
)

// Kernels that differ only in names are alpha-equivalent: the same
// computation on buffers, blocks and loops named differently, as the
// kernels of a model's repeated layers are (a 12-layer BERT has 144
// kernels and 14 computations; resnet50, 59 and 30). Compile decides the
// schedule of one kernel of each computation and gives the others its
// schedule renamed, and compiles one native kernel per computation: the
// compiled code takes its buffers and sizes by position, which alpha-
// equivalent functions list in the same order.

// alphaForm is a function's text with every name it declares (its own,
// its sizes', buffers', loops', blocks' and iteration variables') replaced
// by its rank of first appearance: alpha-equivalent functions have the
// same text. Every other word (a dtype, an intrinsic, a keyword: reserved
// words no name can be) stays as it is. names[k] is the name of rank k.
type alphaForm struct {
	text  string
	names []string
}

// identifiers calls fn for each identifier of a function's text (a word
// of letters, digits and _ that starts with a letter or _ and follows no
// digit or '.', so that 1e5 and 0x1.8p3 are numbers, not names), with its
// start and end.
func identifiers(text string, fn func(start, end int)) {
	isWord := func(c byte) bool {
		return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	for i := 0; i < len(text); {
		c := text[i]
		if !isWord(c) {
			i++
			continue
		}
		j := i
		for j < len(text) && isWord(text[j]) {
			j++
		}
		startsName := !('0' <= c && c <= '9') && (i == 0 || text[i-1] != '.')
		if startsName {
			fn(i, j)
		}
		i = j
	}
}

// declared returns the names f declares.
func declared(f *ast.Func) map[string]bool {
	names := map[string]bool{f.Name: true}
	for _, v := range f.Sizes {
		names[v.Name] = true
	}
	for _, b := range f.Params {
		names[b.Name] = true
	}
	ast.Inspect(f.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.For:
			names[n.Var.Name] = true
		case *ast.ScheduleBlock:
			names[n.Name] = true
			for _, it := range n.Iters {
				if it.Var != nil {
					names[it.Var.Name] = true
				}
			}
		case *ast.Alloc:
			names[n.Buffer.Name] = true
		}
		return true
	})
	return names
}

func alphaOf(f *ast.Func) alphaForm {
	text := f.String()
	isName := declared(f)
	rank := map[string]int{}
	var names []string
	var b strings.Builder
	last := 0
	identifiers(text, func(start, end int) {
		name := text[start:end]
		if !isName[name] {
			return
		}
		r, ok := rank[name]
		if !ok {
			r = len(names)
			rank[name] = r
			names = append(names, name)
		}
		b.WriteString(text[last:start])
		b.WriteString("\x00")
		b.WriteString(strconv.Itoa(r))
		last = end
	})
	b.WriteString(text[last:])
	return alphaForm{text: b.String(), names: names}
}

// renameLike returns g, a function made from from's function (a schedule
// of it), with from's names replaced by to's, where from and to have the
// same text. Names of g that are not from's (the loops and buffers a
// schedule adds) stay; when one of them is also a name of to's, the
// rename would capture it, and renameLike reports false.
func renameLike(g *ast.Func, from, to alphaForm) (*ast.Func, bool) {
	if from.text != to.text || len(from.names) != len(to.names) {
		return nil, false
	}
	mapping := make(map[string]string, len(from.names))
	for k, n := range from.names {
		mapping[n] = to.names[k]
	}
	target := make(map[string]bool, len(to.names))
	for _, n := range to.names {
		target[n] = true
	}
	text := g.String()
	var b strings.Builder
	last, ok := 0, true
	identifiers(text, func(start, end int) {
		name := text[start:end]
		repl, mapped := mapping[name]
		if !mapped {
			if target[name] {
				ok = false
			}
			return
		}
		b.WriteString(text[last:start])
		b.WriteString(repl)
		last = end
	})
	if !ok {
		return nil, false
	}
	b.WriteString(text[last:])
	f, err := ast.Parse(b.String())
	if err != nil || alphaOf(f).text != alphaOf(g).text {
		return nil, false
	}
	return f, true
}
