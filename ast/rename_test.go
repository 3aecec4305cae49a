package ast_test

import (
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/golden"
)

// goldenFuncs parses every function under testdata/ast/print.
func goldenFuncs(t *testing.T) map[string]*ast.Func {
	t.Helper()
	out := map[string]*ast.Func{}
	for _, path := range goldenFiles(t, "print") {
		ar, err := txtar.ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text, _ := golden.Section(ar, "func.loom")
		f, err := ast.Parse(text)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out[strings.TrimSuffix(filepath.Base(path), ".txtar")] = f
	}
	return out
}

// prefixed renames every identifier of f (symbolic sizes aside) by a
// prefix (the root block aside): the same computation under other names,
// as two layers of a network are.
func prefixed(t *testing.T, f *ast.Func, prefix string) *ast.Func {
	t.Helper()
	r := &ast.Renaming{Func: prefix + f.Name, Buffers: map[string]string{}, Vars: map[string]string{}, Blocks: map[string]string{}}
	sizes := map[string]bool{}
	for _, v := range f.Sizes {
		sizes[v.Name] = true
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.Buffer:
			r.Buffers[x.Name] = prefix + x.Name
		case *ast.Var:
			if !sizes[x.Name] {
				r.Vars[x.Name] = prefix + x.Name
			}
		case *ast.For:
			r.Vars[x.Var.Name] = prefix + x.Var.Name
		case *ast.ScheduleBlock:
			if x.Name != ast.RootBlock {
				r.Blocks[x.Name] = prefix + x.Name
			}
			for _, it := range x.Iters {
				r.Vars[it.Var.Name] = prefix + it.Var.Name
			}
		}
		return true
	})
	g, err := ast.Rename(f, r)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestCanonical checks the canonical form of every golden function: it
// verifies and prints back, is its own canonical form, the renaming it
// returns gives the function back, and the function under other names
// has the same canonical form while a changed constant does not.
func TestCanonical(t *testing.T) {
	for name, f := range goldenFuncs(t) {
		t.Run(name, func(t *testing.T) {
			c, back := ast.Canonical(f)
			if err := ast.Verify(c); err != nil {
				t.Fatalf("canonical form does not verify: %v\n%s", err, ast.Print(c))
			}
			if p, err := ast.Parse(ast.Print(c)); err != nil || !ast.Equal(p, c) {
				t.Fatalf("canonical form does not print back (%v):\n%s", err, ast.Print(c))
			}
			if again, _ := ast.Canonical(c); !ast.Equal(again, c) {
				t.Errorf("the canonical form of the canonical form differs:\n%s\n%s", ast.Print(c), ast.Print(again))
			}
			g, err := ast.Rename(c, back)
			if err != nil {
				t.Fatal(err)
			}
			if !ast.Equal(g, f) {
				t.Errorf("renaming back (%v) does not give the function:\n%s\nwant\n%s", back, ast.Print(g), ast.Print(f))
			}
			other := prefixed(t, f, "layer7_")
			if ast.Equal(other, f) {
				t.Fatal("the renamed function equals the function")
			}
			if oc, _ := ast.Canonical(other); ast.Hash(oc) != ast.Hash(c) {
				t.Errorf("renamed, the canonical form differs:\n%s\nwant\n%s", ast.Print(oc), ast.Print(c))
			}
			changed := changeConstant(f)
			if changed == nil {
				return
			}
			if cc, _ := ast.Canonical(changed); ast.Hash(cc) == ast.Hash(c) {
				t.Errorf("a changed constant keeps the canonical hash")
			}
		})
	}
}

// changeConstant returns f with its first float constant (or else its
// first integer constant above 1) changed, nil when it has none.
func changeConstant(f *ast.Func) *ast.Func {
	done := false
	var expr func(e ast.Expr) ast.Expr
	var stmt func(s ast.Stmt) ast.Stmt
	expr = func(e ast.Expr) ast.Expr {
		if c, ok := e.(*ast.Const); ok && !done && (c.DType.IsFloat() || c.Int > 1) {
			done = true
			d := *c
			d.Float, d.Int = d.Float+0.5, d.Int+1
			return &d
		}
		return ast.MapChildren(e, stmt, expr)
	}
	stmt = func(s ast.Stmt) ast.Stmt { return ast.MapChildren(s, stmt, expr) }
	g := ast.MapChildren(f, stmt, expr)
	if !done {
		return nil
	}
	return g
}

// TestRenameDerivedAndCollisions checks that names derived from a renamed
// one follow it, and that a renaming giving two identifiers one name is
// refused with both names.
func TestRenameDerivedAndCollisions(t *testing.T) {
	f, err := ast.Parse(`func f(A: float32[4], B: float32[4]) {
  ScheduleBlock(root) {
    serial for (i, 0, 2) {
      serial for (i_o, 0, 2) {
        ScheduleBlock(B_update) {
          v = axis.bind(i * 2 + i_o)
          axis.domain(v = spatial(0, 4))
          reads(A[v])
          writes(B[v])
          B[v] = A[v]
        }
      }
    }
  }
}
`)
	if err != nil {
		t.Fatal(err)
	}
	r := &ast.Renaming{Buffers: map[string]string{"B": "Out"}, Vars: map[string]string{"i": "x"}, Blocks: map[string]string{"B": "out"}, Derived: true}
	g, err := ast.Rename(f, r)
	if err != nil {
		t.Fatal(err)
	}
	text := ast.Print(g)
	for _, want := range []string{"Out: float32[4]", "for (x, 0, 2)", "for (x_o, 0, 2)", "ScheduleBlock(out_update)", "x * 2 + x_o", "Out[v] = A[v]"} {
		if !strings.Contains(text, want) {
			t.Errorf("renamed function lacks %q:\n%s", want, text)
		}
	}
	for _, c := range []struct {
		r    *ast.Renaming
		want string // the error's names; "" for none
	}{
		{&ast.Renaming{Buffers: map[string]string{"B": "A"}}, "buffer A and B would both be named A"},
		{&ast.Renaming{Vars: map[string]string{"i": "v"}}, "would both be named v"},
		{&ast.Renaming{Vars: map[string]string{"i": "i_o"}}, "would both be named i_o"},
		{&ast.Renaming{Vars: map[string]string{"i": "j"}, Derived: true}, ""},
		{&ast.Renaming{Vars: map[string]string{"i": "x", "i_o": "x_o"}}, ""},
		{&ast.Renaming{Vars: map[string]string{"i": "x", "i_o": "x"}}, "would both be named x"},
	} {
		_, err := ast.Rename(f, c.r)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.r, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: got %v, want an error with %q", c.r, err, c.want)
		}
	}
}

// TestCanonicalAvoidsSizeNames: a symbolic size named like a canonical
// variable keeps its name, and the variables are numbered past it.
func TestCanonicalAvoidsSizeNames(t *testing.T) {
	f, err := ast.Parse(`func f[_v0: int32](A: float32[_v0], B: float32[_v0]) {
  ScheduleBlock(root) {
    serial for (i, 0, _v0) {
      ScheduleBlock(B) {
        v = axis.bind(i)
        axis.domain(v = spatial(0, _v0))
        reads(A[v])
        writes(B[v])
        B[v] = A[v] * 2.0f
      }
    }
  }
}
`)
	if err != nil {
		t.Fatal(err)
	}
	c, back := ast.Canonical(f)
	if err := ast.Verify(c); err != nil {
		t.Fatalf("%v\n%s", err, ast.Print(c))
	}
	if text := ast.Print(c); !strings.Contains(text, "serial for (_v1, 0, _v0)") {
		t.Errorf("the loop variable is not numbered past the size:\n%s", text)
	}
	if g, err := ast.Rename(c, back); err != nil || !ast.Equal(g, f) {
		t.Errorf("renaming back: %v", err)
	}
}
