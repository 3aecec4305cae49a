package schedule

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseTraceText reads a trace in the text form Trace.String writes, one
// instruction per line:
//
//	b0 = get_block("C")
//	l1, l2, l3 = get_loops(b0)
//	v4, v5 = sample_perfect_tile(l1, 2, 16) decision=[8, 4]
//	l6, l7 = split(l1, [v4, v5])
//	vectorize(l7)
//
// Blank lines and lines starting with # are ignored. Errors give the line.
func ParseTraceText(src string) (*Trace, error) {
	t := &Trace{}
	for n, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		in, err := parseInst(line)
		if err != nil {
			return nil, fmt.Errorf("schedule: trace line %d: %w", n+1, err)
		}
		t.Insts = append(t.Insts, in)
	}
	return t, nil
}

func parseInst(line string) (Inst, error) {
	var in Inst
	if eq := strings.Index(line, "="); eq >= 0 && !strings.Contains(line[:eq], "(") {
		for _, o := range strings.Split(line[:eq], ",") {
			o = strings.TrimSpace(o)
			if !isIdent(o) {
				return in, fmt.Errorf("output %q is not a name", o)
			}
			in.Outputs = append(in.Outputs, o)
		}
		line = strings.TrimSpace(line[eq+1:])
	}
	open := strings.Index(line, "(")
	if open <= 0 {
		return in, fmt.Errorf("expected kind(arguments)")
	}
	in.Kind = strings.TrimSpace(line[:open])
	if !isIdent(in.Kind) {
		return in, fmt.Errorf("instruction kind %q is not a name", in.Kind)
	}
	p := &argParser{s: line[open+1:]}
	for {
		p.space()
		if p.peek() == ')' {
			p.i++
			break
		}
		if len(in.Args) > 0 {
			if !p.eat(',') {
				return in, fmt.Errorf("expected , or ) at %q", p.rest())
			}
		}
		a, err := p.arg()
		if err != nil {
			return in, err
		}
		in.Args = append(in.Args, a)
	}
	p.space()
	if rest := p.rest(); rest != "" {
		d, ok := strings.CutPrefix(rest, "decision=")
		if !ok {
			return in, fmt.Errorf("unexpected %q after the arguments", rest)
		}
		dp := &argParser{s: d}
		a, err := dp.arg()
		if err != nil || !a.IsList || strings.TrimSpace(dp.rest()) != "" {
			return in, fmt.Errorf("decision must be a list of integers")
		}
		in.Decision = []int64{}
		for _, x := range a.List {
			if x.Int == nil {
				return in, fmt.Errorf("decision must be a list of integers")
			}
			in.Decision = append(in.Decision, *x.Int)
		}
	}
	return in, nil
}

type argParser struct {
	s string
	i int
}

func (p *argParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *argParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *argParser) eat(c byte) bool {
	p.space()
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

func (p *argParser) rest() string { return strings.TrimSpace(p.s[p.i:]) }

func (p *argParser) arg() (Arg, error) {
	p.space()
	switch c := p.peek(); {
	case c == '[':
		p.i++
		var list []Arg
		for {
			p.space()
			if p.peek() == ']' {
				p.i++
				return ListArg(list...), nil
			}
			if len(list) > 0 && !p.eat(',') {
				return Arg{}, fmt.Errorf("expected , or ] at %q", p.rest())
			}
			a, err := p.arg()
			if err != nil {
				return Arg{}, err
			}
			list = append(list, a)
		}
	case c == '"':
		j := p.i + 1
		for j < len(p.s) && p.s[j] != '"' {
			if p.s[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(p.s) {
			return Arg{}, fmt.Errorf("unterminated string")
		}
		v, err := strconv.Unquote(p.s[p.i : j+1])
		if err != nil {
			return Arg{}, fmt.Errorf("malformed string %s", p.s[p.i:j+1])
		}
		p.i = j + 1
		return Str(v), nil
	case c == '-' || c >= '0' && c <= '9':
		j := p.i + 1
		for j < len(p.s) && strings.IndexByte("0123456789.eE+-", p.s[j]) >= 0 && !(p.s[j] == '-' && p.s[j-1] != 'e' && p.s[j-1] != 'E') && !(p.s[j] == '+' && p.s[j-1] != 'e' && p.s[j-1] != 'E') {
			j++
		}
		text := p.s[p.i:j]
		p.i = j
		if v, err := strconv.ParseInt(text, 10, 64); err == nil {
			return IntArg(v), nil
		}
		v, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return Arg{}, fmt.Errorf("malformed number %s", text)
		}
		return Arg{Float: &v}, nil
	case isIdentStart(c):
		j := p.i
		for j < len(p.s) && (isIdentStart(p.s[j]) || p.s[j] >= '0' && p.s[j] <= '9') {
			j++
		}
		word := p.s[p.i:j]
		p.i = j
		switch word {
		case "true", "false":
			v := word == "true"
			return Arg{Bool: &v}, nil
		}
		return Ref(word), nil
	}
	return Arg{}, fmt.Errorf("expected an argument at %q", p.rest())
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isIdent(s string) bool {
	if s == "" || !isIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdentStart(s[i]) && !(s[i] >= '0' && s[i] <= '9') {
			return false
		}
	}
	return true
}
