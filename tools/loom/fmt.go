package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/loom-go/loom/ast"
)

// runFmt parses and verifies each file and prints it in canonical form, or
// with -w rewrites the file in place.
func runFmt(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("fmt", "[-w] FILE...", "Checks .loom files (parse errors with line:column) and prints each in canonical\nform; -w rewrites the files instead.", stderr)
	write := fs.Bool("w", false, "write the canonical form back to each file")
	asJSON := fs.Bool("json", false, "print a JSON object per file: file, changed (its text differs from the canonical form), error (a parse error, with line:column), and the canonical text (without -w)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		return wrongArgs(fs, stderr, "at least one FILE")
	}
	code := 0
	for _, path := range fs.Args() {
		report := formatted{File: path}
		f, err := parseFile(path)
		if err != nil {
			code = 1
			if *asJSON {
				report.Error = err.Error()
				json.NewEncoder(stdout).Encode(report)
				continue
			}
			fmt.Fprintln(stderr, err)
			continue
		}
		text := ast.Print(f)
		if *asJSON {
			if old, err := readInput(path); err == nil {
				report.Changed = string(old) != text
			}
		}
		if *write {
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				fmt.Fprintln(stderr, err)
				code = 1
				continue
			}
			if *asJSON {
				json.NewEncoder(stdout).Encode(report)
			}
			continue
		}
		if *asJSON {
			report.Text = text
			json.NewEncoder(stdout).Encode(report)
			continue
		}
		fmt.Fprint(stdout, text)
	}
	return code
}

// formatted is what fmt -json prints of a file.
type formatted struct {
	File    string `json:"file"`
	Changed bool   `json:"changed"`
	Error   string `json:"error,omitempty"`
	Text    string `json:"text,omitempty"`
}

// parseFile reads and parses a .loom file; errors carry the file name.
func parseFile(path string) (*ast.Func, error) {
	src, err := readInput(path)
	if err != nil {
		return nil, err
	}
	f, err := ast.Parse(string(src))
	if pe, ok := err.(*ast.ParseError); ok {
		pe.Filename = path
	}
	return f, err
}

// maxInput is the largest input file loom reads (a .loom function, a
// graph, a trace): far beyond any real one, and small enough that reading
// it cannot exhaust the machine.
const maxInput = 64 << 20

// readInput reads a file given on the command line ("-" is the standard
// input), refusing one larger than maxInput before it is all read.
func readInput(path string) ([]byte, error) {
	var r io.Reader
	if path == "-" {
		r = os.Stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.IsDir() {
			return nil, fmt.Errorf("%s is a directory", path)
		}
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(data) > maxInput {
		return nil, fmt.Errorf("%s is larger than %d MiB, the limit of an input file", path, maxInput>>20)
	}
	return data, nil
}
