package fusion

import (
	"errors"
	"fmt"

	"github.com/loom-go/loom/ast"
)

// ErrGraph is wrapped by every error about a bad graph: malformed JSON, an
// unknown operator, wrong arity, a shape mismatch, a cycle, a dangling
// tensor, a symbol used inconsistently.
var ErrGraph = errors.New("bad graph")

// GraphError is a problem with one place of a graph. Where is the JSON
// path of the offending node or field (nodes[3].inputs[1]) or a tensor
// name; Node names the node (its output tensor and operator) when there
// is one.
type GraphError struct {
	Where string
	Node  string
	Msg   string
}

func (e *GraphError) Error() string {
	where := e.Where
	if e.Node != "" {
		if where != "" {
			where += " "
		}
		where += "(" + e.Node + ")"
	}
	if where == "" {
		return ast.ClipWords("fusion: " + e.Msg)
	}
	return ast.ClipWords("fusion: " + where + ": " + e.Msg)
}

func (e *GraphError) Unwrap() error { return ErrGraph }

// nodeErr returns an error about node n, at index i of the graph's nodes.
func nodeErr(i int, n *Node, field, format string, args ...any) *GraphError {
	where := fmt.Sprintf("nodes[%d]", i)
	if field != "" {
		where += "." + field
	}
	name := ""
	if n != nil && n.Output != nil {
		name = n.Output.Name + " = " + n.Op
	} else if n != nil {
		name = n.Op
	}
	return &GraphError{Where: where, Node: name, Msg: fmt.Sprintf(format, args...)}
}
