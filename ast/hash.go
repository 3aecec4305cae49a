package ast

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
)

// Digest is a structural hash: the SHA-256 of a canonical encoding of a
// node. It is stable across runs, platforms and loom versions that do not
// change the IR, so it can key the tuning database and the compile cache.
type Digest [32]byte

// String returns the digest in hexadecimal.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// Hash returns the structural hash of n. Structurally equal nodes (see
// [Equal]) have equal hashes.
func Hash(n Node) Digest {
	var e encoder
	e.node(n)
	return sha256.Sum256(e.buf.Bytes())
}

// Equal reports whether a and b are structurally equal: nodes of the same
// kinds with the same fields, recursively. Variables are compared by name and
// type, buffers at their declaration by name, element type, shape and scope
// and at each access by name and element type, float constants by their bits
// (so NaN equals NaN and -0 differs from 0). Annotations compare as maps.
// Equal does not look through sequences: a Seq of one statement differs from
// the statement.
func Equal(a, b Node) bool {
	var ea, eb encoder
	ea.node(a)
	eb.node(b)
	return bytes.Equal(ea.buf.Bytes(), eb.buf.Bytes())
}

// encoder writes a canonical, injective encoding of a tree: every node
// starts with a tag byte, every list with its length, every string with its
// length. Equal and Hash are both defined on it, so they always agree.
type encoder struct {
	buf bytes.Buffer
}

// Tags of the encoding. Their values are part of the hash: never renumber.
const (
	tagNil byte = iota
	tagConst
	tagVar
	tagBinary
	tagNot
	tagSelect
	tagCast
	tagCall
	tagLoad
	tagFor
	tagBlock
	tagStore
	tagIf
	tagSeq
	tagAlloc
	tagBuffer
	tagFunc
)

func (e *encoder) byte(b byte) { e.buf.WriteByte(b) }

func (e *encoder) int(v int64) {
	var b [binary.MaxVarintLen64]byte
	e.buf.Write(b[:binary.PutVarint(b[:], v)])
}

func (e *encoder) str(s string) {
	e.int(int64(len(s)))
	e.buf.WriteString(s)
}

func (e *encoder) node(n Node) {
	switch n := n.(type) {
	case Expr:
		e.expr(n)
	case Stmt:
		e.stmt(n)
	case *Buffer:
		e.bufferDecl(n)
	case *Func:
		if n == nil {
			e.byte(tagNil)
			return
		}
		e.byte(tagFunc)
		e.str(n.Name)
		e.int(int64(len(n.Sizes)))
		for _, v := range n.Sizes {
			e.expr(v)
		}
		e.int(int64(len(n.Params)))
		for _, b := range n.Params {
			e.bufferDecl(b)
		}
		e.stmt(n.Body)
	case nil:
		e.byte(tagNil)
	default:
		panic(fmt.Sprintf("ast.Hash: unexpected node %T", n))
	}
}

func (e *encoder) bufferDecl(b *Buffer) {
	if b == nil {
		e.byte(tagNil)
		return
	}
	e.byte(tagBuffer)
	e.str(b.Name)
	e.byte(byte(b.DType))
	e.byte(byte(b.Scope))
	e.exprs(b.Shape)
}

func (e *encoder) bufferRef(b *Buffer) {
	if b == nil {
		e.byte(tagNil)
		return
	}
	e.str(b.Name)
	e.byte(byte(b.DType))
}

func (e *encoder) exprs(es []Expr) {
	e.int(int64(len(es)))
	for _, x := range es {
		e.expr(x)
	}
}

func (e *encoder) expr(x Expr) {
	if isNilExpr(x) {
		e.byte(tagNil)
		return
	}
	switch x := x.(type) {
	case *Const:
		e.byte(tagConst)
		e.byte(byte(x.DType))
		if x.DType.IsFloat() {
			bits := math.Float64bits(x.Float)
			if math.IsNaN(x.Float) {
				bits = math.Float64bits(math.NaN())
			}
			e.int(int64(bits))
		} else {
			e.int(x.Int)
		}
	case *Var:
		e.byte(tagVar)
		e.str(x.Name)
		e.byte(byte(x.DType))
	case *Binary:
		e.byte(tagBinary)
		e.byte(byte(x.Op))
		e.expr(x.A)
		e.expr(x.B)
	case *Not:
		e.byte(tagNot)
		e.expr(x.X)
	case *Select:
		e.byte(tagSelect)
		e.expr(x.Cond)
		e.expr(x.T)
		e.expr(x.F)
	case *Cast:
		e.byte(tagCast)
		e.byte(byte(x.To))
		e.expr(x.X)
	case *Call:
		e.byte(tagCall)
		e.byte(byte(x.Func))
		e.exprs(x.Args)
	case *Load:
		e.byte(tagLoad)
		e.bufferRef(x.Buffer)
		e.exprs(x.Indices)
	default:
		panic(fmt.Sprintf("ast.Hash: unexpected expression %T", x))
	}
}

func (e *encoder) varDef(v *Var) {
	if v == nil {
		e.byte(tagNil)
		return
	}
	e.expr(v)
}

func (e *encoder) rng(r Range) {
	e.expr(r.Min)
	e.expr(r.Extent)
}

func (e *encoder) regions(rs []Region) {
	e.int(int64(len(rs)))
	for _, r := range rs {
		e.bufferRef(r.Buffer)
		e.int(int64(len(r.Ranges)))
		for _, rg := range r.Ranges {
			e.rng(rg)
		}
	}
}

func (e *encoder) annotations(a Annotations) {
	e.int(int64(len(a)))
	for _, k := range a.Keys() {
		e.str(k)
		switch v := a[k].(type) {
		case int64:
			e.byte(1)
			e.int(v)
		case float64:
			e.byte(2)
			e.int(int64(math.Float64bits(v)))
		case string:
			e.byte(3)
			e.str(v)
		case bool:
			e.byte(4)
			if v {
				e.byte(1)
			} else {
				e.byte(0)
			}
		default:
			e.byte(0)
			e.str(fmt.Sprintf("%T", v))
		}
	}
}

func (e *encoder) stmt(s Stmt) {
	if isNilStmt(s) {
		e.byte(tagNil)
		return
	}
	switch s := s.(type) {
	case *For:
		e.byte(tagFor)
		e.varDef(s.Var)
		e.expr(s.Min)
		e.expr(s.Extent)
		e.byte(byte(s.Kind))
		e.annotations(s.Annotations)
		e.stmt(s.Body)
	case *ScheduleBlock:
		e.byte(tagBlock)
		e.str(s.Name)
		e.int(int64(len(s.Iters)))
		for _, it := range s.Iters {
			if it == nil {
				e.byte(tagNil)
				continue
			}
			e.varDef(it.Var)
			e.byte(byte(it.Kind))
			e.rng(it.Dom)
			e.expr(it.Binding)
		}
		e.expr(s.Predicate)
		e.regions(s.Reads)
		e.regions(s.Writes)
		e.annotations(s.Annotations)
		e.stmt(s.Init)
		e.stmt(s.Body)
	case *Store:
		e.byte(tagStore)
		e.bufferRef(s.Buffer)
		e.exprs(s.Indices)
		e.expr(s.Value)
	case *IfThenElse:
		e.byte(tagIf)
		e.expr(s.Cond)
		e.stmt(s.Then)
		e.stmt(s.Else)
	case *Seq:
		e.byte(tagSeq)
		e.int(int64(len(s.Stmts)))
		for _, st := range s.Stmts {
			e.stmt(st)
		}
	case *Alloc:
		e.byte(tagAlloc)
		e.bufferDecl(s.Buffer)
	default:
		panic(fmt.Sprintf("ast.Hash: unexpected statement %T", s))
	}
}
