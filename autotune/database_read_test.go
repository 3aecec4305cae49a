package autotune

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sparseHoles reports whether the file system of dir tells where a sparse
// file's data is (SEEK_DATA), so that a reader can seek past a hole.
func sparseHoles(t *testing.T, dir string) bool {
	path := filepath.Join(dir, "probe")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	defer f.Close()
	f.Write([]byte("x"))
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	next, ok := nextData(f, 1<<20)
	return ok && next < 0
}

// TestDatabaseNULTail: a database followed by a 9 GiB NUL tail (truncate
// -s +9G, what a crash can leave) keeps every record before it, reads one
// appended after it, says once what it skipped, and reads the tail in
// bounded memory; where the file system knows the tail is a hole, it
// seeks past it instead of reading it.
func TestDatabaseNULTail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "db.jsonl")
	db, err := OpenDatabase(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := db.Append(rec("w", float64(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	fi, _ := os.Stat(path)
	good := fi.Size()
	const tail = 9 << 30
	if err := os.Truncate(path, good+tail); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	db.Warn = func(msg string) { warnings = append(warnings, msg) }
	recs, skipped, err := db.Load()
	if err != nil || len(recs) != 3 || skipped != 0 {
		t.Fatalf("%d records, %d skipped lines, %v; want the 3 before the tail", len(recs), skipped, err)
	}
	// The tuner appends after the tail, on a fresh line.
	if err := db.Append(rec("w", 0.5)); err != nil {
		t.Fatal(err)
	}
	recs, _, err = db.Load()
	if err != nil || len(recs) != 4 || recs[3].Median != 0.5 {
		t.Fatalf("after an append: %d records, %v; want 4, the last appended", len(recs), err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "9.0 GiB of NUL bytes") || !strings.Contains(warnings[0], "kept the 3 records before") {
		t.Errorf("warnings %q; want one saying 9 GiB of NULs were skipped and 3 records kept", warnings)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, dmg, st, err := readRecords(f)
	if err != nil || len(recs) != 4 || dmg.NUL != tail || dmg.At != good || dmg.Before != 3 || dmg.After != 1 {
		t.Fatalf("%d records, damage %+v, %v", len(recs), dmg, err)
	}
	if st.held > 64<<10 {
		t.Errorf("held a line of %d bytes; records are under 1 KiB", st.held)
	}
	if sparseHoles(t, dir) && st.read > 16<<20 {
		t.Errorf("read %d bytes of a file whose 9 GiB tail is a hole", st.read)
	}
}

// TestDatabaseDamage: garbage, a line cut by a NUL run in a block that
// was written (not a hole), and a line longer than the reader holds are
// each skipped, and the records between and after them kept.
func TestDatabaseDamage(t *testing.T) {
	line := func(r *Record) []byte {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return append(b, '\n')
	}
	var data bytes.Buffer
	data.Write(line(rec("w", 1)))
	data.WriteString("not json\n")
	data.Write(line(rec("w", 2)))
	cut := line(rec("w", 3))
	data.Write(cut[:len(cut)/2])
	data.Write(make([]byte, 3<<20)) // written zeros, 3 MiB: more than one read
	data.WriteString("\n")
	data.Write(line(rec("w", 4)))
	data.Write(bytes.Repeat([]byte("x"), maxRecordLine+5))
	data.WriteString("\n")
	data.Write(line(rec("w", 5)))
	data.Write(make([]byte, 10))
	data.Write(line(rec("w", 6))) // right after NULs, no line break between
	path := filepath.Join(t.TempDir(), "db.jsonl")
	if err := os.WriteFile(path, data.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, dmg, st, err := readRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	var medians []float64
	for _, r := range recs {
		medians = append(medians, r.Median)
	}
	if len(medians) != 5 || medians[0] != 1 || medians[1] != 2 || medians[2] != 4 || medians[3] != 5 || medians[4] != 6 {
		t.Errorf("records %v; want 1 2 4 5 6", medians)
	}
	if dmg.Lines != 3 || dmg.NUL != 3<<20+10 || dmg.Before != 1 || dmg.After != 4 {
		t.Errorf("damage %+v; want 3 lines (garbage, the cut record, the long line), 3 MiB + 10 NUL bytes, 1 record before", dmg)
	}
	if st.held > maxRecordLine {
		t.Errorf("held a line of %d bytes, over the limit of %d", st.held, maxRecordLine)
	}
}

// TestDatabaseNotAFile: a device (/dev/zero never ends, /dev/urandom
// neither), or a directory, is refused by name, not read.
func TestDatabaseNotAFile(t *testing.T) {
	for _, path := range []string{"/dev/zero", "/dev/urandom", t.TempDir()} {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		if _, err := OpenDatabase(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("OpenDatabase(%s): %v, want an error naming it", path, err)
		}
		db := &Database{Path: path}
		if _, _, err := db.Load(); err == nil || !strings.Contains(err.Error(), "database "+path+" is") {
			t.Errorf("Load of %s: %v, want an error naming it", path, err)
		}
	}
	// A missing file is an empty database, not an error.
	db := &Database{Path: filepath.Join(t.TempDir(), "none.jsonl")}
	if recs, _, err := db.Load(); err != nil || len(recs) != 0 || errors.Is(err, io.EOF) {
		t.Errorf("missing file: %d records, %v", len(recs), err)
	}
}
