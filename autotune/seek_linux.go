package autotune

import (
	"errors"
	"os"
	"syscall"
)

// seekData is lseek(2)'s SEEK_DATA on Linux.
const seekData = 3

// nextData moves f to the first byte of data at or after off, skipping a
// hole of a sparse file, and returns its offset: -1 when the rest of the
// file is a hole. ok is false where the file system cannot tell (f's
// offset is then unchanged).
func nextData(f *os.File, off int64) (next int64, ok bool) {
	n, err := f.Seek(off, seekData)
	switch {
	case errors.Is(err, syscall.ENXIO):
		return -1, true
	case err != nil:
		return off, false
	}
	return n, true
}
