// Command gen writes the benchmark suite's graphs (package suite) as JSON
// files into a directory: go run ./internal/suite/gen testdata/suite.
package main

import (
	"fmt"
	"os"

	"github.com/loom-go/loom/internal/suite"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen DIR")
		os.Exit(2)
	}
	if err := suite.Write(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
