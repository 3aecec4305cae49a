package ast

import (
	"fmt"
	"strconv"
	"strings"
)

// tokenKind classifies a token of the text form.
type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokIdent
	tokInt    // 12, 12L
	tokFloat  // 1.5, 1.5f, 1e-3h, 2bf
	tokString // "key"
	tokPunct  // ( ) [ ] { } , : . = + - * / % ! < > <= >= == != && ||
	tokIllegal
)

// Pos is a position in the text form: 1-based line and column (in bytes).
type Pos struct {
	Line, Col int
}

// String returns the position as line:column.
func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

type token struct {
	kind tokenKind
	text string
	pos  Pos
}

// describe returns the token as an error message shows it.
func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of input"
	case tokIdent:
		return fmt.Sprintf("identifier %q", t.text)
	case tokInt, tokFloat:
		return fmt.Sprintf("number %s", t.text)
	case tokString:
		return fmt.Sprintf("string %s", t.text)
	case tokIllegal:
		return fmt.Sprintf("unexpected character %q", t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

// lexer splits the text form into tokens. It never fails: a character that
// starts no token becomes a tokIllegal token that the parser reports.
type lexer struct {
	src  string
	off  int
	line int
	col  int
}

func newLexer(src string) *lexer { return &lexer{src: src, line: 1, col: 1} }

func (l *lexer) advance(n int) {
	for i := 0; i < n && l.off < len(l.src); i++ {
		if l.src[l.off] == '\n' {
			l.line++
			l.col = 1
		} else {
			l.col++
		}
		l.off++
	}
}

func (l *lexer) skipSpaceAndComments() {
	for l.off < len(l.src) {
		c := l.src[l.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			l.advance(1)
		case strings.HasPrefix(l.src[l.off:], "//"):
			end := strings.IndexByte(l.src[l.off:], '\n')
			if end < 0 {
				end = len(l.src) - l.off
			}
			l.advance(end)
		default:
			return
		}
	}
}

var twoCharPuncts = []string{"<=", ">=", "==", "!=", "&&", "||"}

const oneCharPuncts = "()[]{},:.=+-*/%!<>"

func (l *lexer) next() token {
	l.skipSpaceAndComments()
	pos := Pos{l.line, l.col}
	if l.off >= len(l.src) {
		return token{kind: tokEOF, pos: pos}
	}
	rest := l.src[l.off:]
	c := rest[0]
	switch {
	case isIdentStart(c):
		n := 1
		for n < len(rest) && isIdentChar(rest[n]) {
			n++
		}
		l.advance(n)
		return token{kind: tokIdent, text: rest[:n], pos: pos}
	case isDigit(c):
		kind, n := scanNumber(rest)
		l.advance(n)
		return token{kind: kind, text: rest[:n], pos: pos}
	case c == '"':
		n := scanString(rest)
		l.advance(n)
		if n < 2 || rest[n-1] != '"' {
			return token{kind: tokIllegal, text: rest[:n], pos: pos}
		}
		return token{kind: tokString, text: rest[:n], pos: pos}
	}
	for _, p := range twoCharPuncts {
		if strings.HasPrefix(rest, p) {
			l.advance(2)
			return token{kind: tokPunct, text: p, pos: pos}
		}
	}
	if strings.IndexByte(oneCharPuncts, c) >= 0 {
		l.advance(1)
		return token{kind: tokPunct, text: rest[:1], pos: pos}
	}
	// Report one whole (possibly multi-byte) character.
	n := 1
	for n < len(rest) && n < 4 && rest[n]&0xc0 == 0x80 {
		n++
	}
	l.advance(n)
	return token{kind: tokIllegal, text: rest[:n], pos: pos}
}

// scanNumber returns the kind and length of the number at the start of s:
// digits, an optional fraction and exponent, and an optional type suffix
// (L, f, h or bf).
func scanNumber(s string) (tokenKind, int) {
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	kind := tokInt
	if n < len(s) && s[n] == '.' {
		kind = tokFloat
		n++
		for n < len(s) && isDigit(s[n]) {
			n++
		}
	}
	if n < len(s) && (s[n] == 'e' || s[n] == 'E') {
		m := n + 1
		if m < len(s) && (s[m] == '+' || s[m] == '-') {
			m++
		}
		if m < len(s) && isDigit(s[m]) {
			kind = tokFloat
			n = m
			for n < len(s) && isDigit(s[n]) {
				n++
			}
		}
	}
	// The suffix, and any letters glued to it, belong to the number token;
	// the parser rejects a suffix it does not know.
	for n < len(s) && isIdentChar(s[n]) {
		n++
	}
	return kind, n
}

// scanString returns the length of the double-quoted string at the start of
// s, up to and including the closing quote, or up to the end of the line if
// it is not closed.
func scanString(s string) int {
	for n := 1; n < len(s); n++ {
		switch s[n] {
		case '\\':
			n++
		case '"':
			return n + 1
		case '\n':
			return n
		}
	}
	return len(s)
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentChar(c byte) bool  { return isIdentStart(c) || isDigit(c) }

// isIdent reports whether s is an identifier: a letter or underscore
// followed by letters, digits and underscores.
func isIdent(s string) bool {
	if s == "" || !isIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdentChar(s[i]) {
			return false
		}
	}
	return true
}

// reservedWords are the identifiers with a meaning in the text form. Names of
// variables, buffers and blocks must avoid them so that every function
// prints as text that parses back to it.
var reservedWords = map[string]bool{
	"func": true, "for": true, "if": true, "else": true, "alloc": true, "in": true,
	"ScheduleBlock": true, "axis": true, "init": true, "predicate": true,
	"reads": true, "writes": true, "attrs": true, "spatial": true, "reduce": true,
	"serial": true, "parallel": true, "vectorized": true, "unrolled": true, "bind": true,
	"select": true, "true": true, "false": true,
	"floordiv": true, "floormod": true, "min": true, "max": true,
	"inf": true, "inff": true, "infh": true, "infbf": true,
	"nan": true, "nanf": true, "nanh": true, "nanbf": true,
	"global": true, "shared": true, "local": true,
}

func init() {
	for _, name := range dtypeNames[1:] {
		reservedWords[name] = true
	}
	for f := range intrinsicInfo[1:] {
		reservedWords[intrinsicInfo[f+1].name] = true
	}
}

// isReserved reports whether s is a reserved word of the text form.
func isReserved(s string) bool { return reservedWords[s] }

// unquote returns the value of a string token.
func unquote(s string) (string, error) { return strconv.Unquote(s) }

// IsName reports whether s can name a buffer, variable, block or size: an
// identifier that is not a reserved word of the text form.
func IsName(s string) bool { return isIdent(s) && !isReserved(s) }
