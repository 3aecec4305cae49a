package main

import (
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
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	code := 0
	for _, path := range fs.Args() {
		f, err := parseFile(path)
		if err != nil {
			fmt.Fprintln(stderr, err)
			code = 1
			continue
		}
		text := ast.Print(f)
		if *write {
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				fmt.Fprintln(stderr, err)
				code = 1
			}
			continue
		}
		fmt.Fprint(stdout, text)
	}
	return code
}

// parseFile reads and parses a .loom file; errors carry the file name.
func parseFile(path string) (*ast.Func, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := ast.Parse(string(src))
	if pe, ok := err.(*ast.ParseError); ok {
		pe.Filename = path
	}
	return f, err
}
