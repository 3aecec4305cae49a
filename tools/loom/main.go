// Command loom is the command-line face of loom, the polyhedral
// schedule-and-codegen toolkit.
//
// Usage:
//
//	loom example              build, print and interpret an example function
//	loom fmt [-w] FILE...     check .loom files and print them in canonical form
//	loom run [-size N=V]... FILE
//	                          interpret a .loom function on random inputs
//	loom import [-dim NAME=VALUE]... -o DIR MODEL.onnx
//	                          convert an ONNX model into a graph (JSON) and its weights (safetensors)
//	loom fuse [-dump PASSES] [-nofuse] [-size S=V]... GRAPH.json
//	                          fuse an operator graph into kernels and print the plan
//	loom tune (-workload W [-size N] | -graph G.json -size S=V... | -func F.loom -size S=V...) [-threads T] [-trials K] [-seed S] [-db FILE] [-out DIR]
//	                          search schedules, keep the records, write the best kernels
//	loom build (-workload W | -func F.loom) [-schedule auto|default|tuned|hand|none | -trace FILE] -out DIR [-name NAME]
//	                          compile a function with a schedule, ready to link into a C program
//	loom build -graph G.json -o DIR [-name NAME]
//	                          compile a whole graph into one C library (NAME.h, libNAME.a, libNAME.so)
//	loom bench -workload W [-size N] [-threads T] [-schedule hand|tuned|none] [-json]
//	                          compile, check and time a built-in workload
//	loom lower ... [-trace FILE]
//	                          print a function before and after a schedule
//	loom replay ...           print the best tuning record's schedule as Go code
//	loom plot ... [-o FILE.svg]
//	                          draw the tuning curves of a function
//
// Every command explains its flags with -h; a failure exits non-zero.
package main

import (
	"fmt"
	"github.com/loom-go/loom/internal/suggest"
	"io"
	"os"
	"runtime/debug"
	"sort"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/allocprof"
)

// command is one subcommand: its one-line synopsis and its body, which
// returns the process exit code.
type command struct {
	synopsis string
	run      func(args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{
	"bench":   {"compile, check and time a built-in workload", runBench},
	"build":   {"compile a function with a schedule (a trace, the best record, the hand-written one) into a directory a C program links", runBuild},
	"example": {"build, print and interpret an example function", runExample},
	"fmt":     {"check .loom files and print them in canonical form", runFmt},
	"fuse":    {"fuse a JSON operator graph into kernels and print the plan", runFuse},
	"import":  {"convert an ONNX model into loom's graph JSON and a weights file", runImport},
	"lower":   {"print a function before and after a schedule (a trace or the best tuning record)", runLower},
	"plot":    {"draw the tuning curves of a function as an SVG file", runPlot},
	"replay":  {"apply the best tuning record of a function and print its schedule as Go code", runReplay},
	"run":     {"interpret a .loom function on random inputs", runRun},
	"tune":    {"search schedules of a workload, keep the records, write the best kernel", runTune},
	"worker":  {"take build and measurement jobs of loom tune -nats from a NATS server (with no arguments: measure one candidate for loom tune, internal)", runWorker},
}

func main() {
	allocprof.Off()
	if os.Getenv("GOGC") == "" {
		// The polyhedral checks of the candidates the tuner makes
		// allocate many small rows: with the default 100, collection
		// took a quarter of loom tune's CPU. The heap stays small (tens
		// of MB live), so a collection at 5x it costs little memory.
		debug.SetGCPercent(400)
	}
	os.Exit(loom(os.Args[1:], os.Stdout, os.Stderr))
}

// loom runs the command line args and returns the exit code. Every
// message on stderr goes through clipWriter: a name of a megabyte quoted
// in an error is cut to its start and its length.
func loom(args []string, stdout, stderr io.Writer) int {
	stderr = clipWriter{stderr}
	if len(args) == 2 && args[0] == "help" {
		// loom help CMD is loom CMD -h.
		if _, ok := commands[args[1]]; ok {
			return loom([]string{args[1], "-h"}, stdout, stderr)
		}
		fmt.Fprintf(stderr, "loom help: unknown command %q%s\n", args[1], suggest.DidYouMean(args[1], commandNames()))
		usage(stderr)
		return 2
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "loom: unknown command %q%s\n", args[0], suggest.DidYouMean(args[0], commandNames()))
		usage(stderr)
		return 2
	}
	return cmd.run(args[1:], stdout, stderr)
}

// commandNames are the commands.
func commandNames() []string {
	var names []string
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: loom <command> [arguments]\n\nloom help <command> (or loom <command> -h) explains a command and its flags.\n\ncommands:")
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-8s %s\n", name, commands[name].synopsis)
	}
	fmt.Fprint(w, conventions)
}

// conventions are what every command keeps to (loom help prints them).
const conventions = `
every command:
  flags go before or after its file arguments (loom fuse g.json -json)
  -json prints JSON lines instead of text; -o DIR or FILE names where the
    commands that write files (build, import, plot, tune) put them
  exit status 0 on success, 1 when the work failed, 2 for a usage mistake
    (an unknown command, flag or name, with the closest names suggested)
  progress is one line redrawn on a terminal, plain lines otherwise
  Ctrl-C stops a search between candidates: what was measured is kept,
    candidates cut short are not recorded
`

// clipWriter writes each message with its words longer than 160 bytes
// cut (ast.ClipWords): the CLI's errors quote names, file paths and
// values from its input, which a hostile input makes megabytes long.
type clipWriter struct{ w io.Writer }

func (c clipWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(c.w, ast.ClipWords(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
