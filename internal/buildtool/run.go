package buildtool

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Error is a build program that failed: which, with what arguments, why
// it stopped (its exit status), the first error it printed, and the file
// holding its whole output ("" when none could be written; Output holds
// it too).
type Error struct {
	Tool   string
	Args   []string
	Err    error
	First  string // the first line that says error (or the first line)
	Output string
	Log    string
}

// maxFirst bounds the error line quoted: a compiler quotes the source,
// and a name in it may be huge.
const maxFirst = 300

// Error says, in one line, what failed, its first error, and where the
// whole output is.
func (e *Error) Error() string {
	msg := fmt.Sprintf("%s failed (%v)", e.Tool, e.Err)
	if e.First != "" {
		msg += ": " + e.First
	}
	if e.Log != "" {
		msg += " (the whole output: " + e.Log + ")"
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Run runs tool with args in dir. When it fails, the error is an *Error,
// its whole output and command line written to dir/loom-TOOL.log
// (another writable file when dir is not).
func Run(dir, tool string, args ...string) error {
	cmd := exec.Command(tool, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	e := &Error{Tool: filepath.Base(tool), Args: args, Err: err, First: firstError(out), Output: string(out)}
	log := fmt.Sprintf("%s %s\n%v\n\n%s", tool, strings.Join(args, " "), err, out)
	path := filepath.Join(dir, "loom-"+e.Tool+".log")
	if werr := os.WriteFile(path, []byte(log), 0o644); werr == nil {
		e.Log = path
	} else if f, werr := os.CreateTemp("", "loom-"+e.Tool+"-*.log"); werr == nil {
		f.WriteString(log)
		f.Close()
		e.Log = f.Name()
	}
	if abs, err := filepath.Abs(e.Log); err == nil && e.Log != "" {
		e.Log = abs
	}
	return e
}

// firstError returns the first line of a build program's output that
// says error (a compiler's "file:line:col: error: ...", a linker's
// "undefined reference"), else its first line, cut to maxFirst bytes.
func firstError(out []byte) string {
	var first string
	for _, line := range bytes.Split(out, []byte("\n")) {
		l := strings.TrimSpace(string(line))
		if l == "" {
			continue
		}
		if first == "" {
			first = l
		}
		low := strings.ToLower(l)
		if strings.Contains(low, "error") || strings.Contains(low, "undefined reference") {
			first = l
			break
		}
	}
	if len(first) > maxFirst {
		first = first[:maxFirst] + "..."
	}
	return first
}
