//go:build unix

package cluster

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockFile is a machine-wide lock all of a machine's workers share (files
// in the cache directory they share, named by the host, so that machines
// sharing a directory over NFS do not share the lock): builds hold it
// shared, a measurement alone, so that no timing runs beside a build or
// another timing. A second file, the intent, keeps a stream of builds
// from starving a measurement: a measurement takes it alone before it
// waits for the builds in hand, and a build passes through it shared.
type lockFile struct{ path, intent string }

func machineLock(dir string) (*lockFile, error) {
	base := filepath.Join(dir, "measure-"+hostname())
	l := &lockFile{base + ".lock", base + ".intent"}
	for _, p := range []string{l.path, l.intent} {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, err
		}
		f.Close()
	}
	return l, nil
}

func (l *lockFile) Close() error { return nil }

func (l *lockFile) shared(ctx context.Context) (func(), error) {
	pass, err := flock(ctx, l.intent, syscall.LOCK_SH)
	if err != nil {
		return nil, err
	}
	defer pass()
	return flock(ctx, l.path, syscall.LOCK_SH)
}

func (l *lockFile) exclusive(ctx context.Context) (func(), error) {
	intent, err := flock(ctx, l.intent, syscall.LOCK_EX)
	if err != nil {
		return nil, err
	}
	defer intent()
	return flock(ctx, l.path, syscall.LOCK_EX)
}

// flock takes a lock on a descriptor of its own (flock locks belong to
// the open file, so each holder opens it), polling so that ctx ends the
// wait; it returns what releases it.
func flock(ctx context.Context, path string, how int) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
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
