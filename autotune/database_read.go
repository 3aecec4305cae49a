package autotune

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/loom-go/loom/internal/sysmem"
)

// maxRecordLine bounds one line of a database: a longer line is damage,
// read through a bounded buffer and skipped, never held whole. A record
// is a few KiB (a trace, its features and times).
const maxRecordLine = 16 << 20

// Damage is what reading a database skipped: lines that are not records
// (a line cut short by a killed writer, garbage, a line longer than
// 16 MiB) and runs of NUL bytes, what a crash can leave where the file
// grew but its data was never written (or truncate -s, which makes a
// sparse hole). The zero Damage is a sound file.
type Damage struct {
	Lines int   // lines that are not records
	NUL   int64 // bytes of NUL runs
	At    int64 // the offset of the first damaged byte
	// Before and After count the records read before and after the
	// first damage.
	Before, After int
}

// Damaged reports whether anything was skipped.
func (d Damage) Damaged() bool { return d.Lines > 0 || d.NUL > 0 }

// String says what was skipped and what was kept, in one line.
func (d Damage) String() string {
	what := ""
	if d.Lines > 0 {
		what = fmt.Sprintf("%d line(s) that are not records", d.Lines)
	}
	if d.NUL > 0 {
		if what != "" {
			what += " and "
		}
		what += sysmem.Bytes(d.NUL) + " of NUL bytes (what a crash can leave)"
	}
	return fmt.Sprintf("skipped %s from byte %d on; kept the %d records before and %d after", what, d.At, d.Before, d.After)
}

// readStats counts the reader's work, for tests: the bytes it read and
// the longest line it held.
type readStats struct {
	read, held int64
}

// readRecords reads the records of a database file, one JSON object a
// line, and describes what it skipped (see Damage). A NUL byte ends a
// line, as a line break does, so a record appended after a NUL run (on a
// fresh line: Append starts one after a line left unfinished) is read. A
// NUL run that is a hole of a sparse file is skipped by seeking past it
// where the system says where data is, not read.
func readRecords(f *os.File) ([]*Record, Damage, readStats, error) {
	var (
		out     []*Record
		dmg     Damage
		st      readStats
		buf     = make([]byte, 1<<20)
		line    []byte
		long    bool  // the line passed maxRecordLine: skipped to its end
		lineAt  int64 // offset of the line's first byte
		off     int64 // offset of buf[0]
		inNUL   bool
		damaged = func(at int64) {
			if !dmg.Damaged() {
				dmg.At, dmg.Before = at, len(out)
			}
		}
	)
	endLine := func() {
		switch {
		case long:
			damaged(lineAt)
			dmg.Lines++
		case len(bytes.TrimSpace(line)) > 0:
			var rec Record
			if json.Unmarshal(line, &rec) == nil && rec.Workload != "" && rec.Trace != nil {
				out = append(out, &rec)
				if dmg.Damaged() {
					dmg.After++
				}
			} else {
				damaged(lineAt)
				dmg.Lines++
			}
		}
		line, long = line[:0], false
	}
	for {
		n, err := f.Read(buf)
		st.read += int64(n)
		c := buf[:n]
		for i := 0; i < len(c); {
			if inNUL {
				j := i
				for j < len(c) && c[j] == 0 {
					j++
				}
				dmg.NUL += int64(j - i)
				if i = j; i == len(c) {
					break
				}
				inNUL = false
				lineAt = off + int64(i)
			}
			// The line goes on to the next line break or NUL.
			end := bytes.IndexByte(c[i:], '\n')
			if end < 0 {
				end = len(c) - i
			}
			if z := bytes.IndexByte(c[i:i+end], 0); z >= 0 {
				end = z
			}
			if !long {
				if len(line)+end > maxRecordLine {
					long, line = true, line[:0]
				} else {
					if len(line) == 0 {
						lineAt = off + int64(i)
					}
					line = append(line, c[i:i+end]...)
					st.held = max(st.held, int64(len(line)))
				}
			}
			i += end
			if i == len(c) {
				break // the line goes on in the next read
			}
			if c[i] == 0 {
				endLine()
				damaged(off + int64(i))
				inNUL = true
			} else {
				endLine()
				i++
			}
			lineAt = off + int64(i)
		}
		off += int64(n)
		if inNUL && n > 0 {
			// A NUL run up to the end of what was read: where the file
			// is sparse, the data after the hole (if any) is found by
			// seeking, not by reading the zeros.
			if next, ok := nextData(f, off); ok {
				if next < 0 { // a hole to the end
					if fi, err := f.Stat(); err == nil && fi.Size() > off {
						dmg.NUL += fi.Size() - off
					}
					break
				}
				dmg.NUL += next - off
				off = next
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return out, dmg, st, err
		}
	}
	endLine()
	return out, dmg, st, nil
}
