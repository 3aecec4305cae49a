//go:build unix

package cluster

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockFile is a machine-wide lock all of a machine's workers share (a
// file in the cache directory they share): builds hold it shared, a
// measurement alone, so that no timing runs beside a build or another
// timing.
type lockFile struct{ path string }

func machineLock(dir string) (*lockFile, error) {
	path := filepath.Join(dir, "measure.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	f.Close()
	return &lockFile{path}, nil
}

func (l *lockFile) Close() error { return nil }

func (l *lockFile) shared(ctx context.Context) (func(), error) { return l.lock(ctx, syscall.LOCK_SH) }

func (l *lockFile) exclusive(ctx context.Context) (func(), error) {
	return l.lock(ctx, syscall.LOCK_EX)
}

// lock takes the lock on a descriptor of its own (flock locks belong to
// the open file, so each holder opens it), polling so that ctx ends the
// wait.
func (l *lockFile) lock(ctx context.Context, how int) (func(), error) {
	f, err := os.OpenFile(l.path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
