//go:build !unix

package cluster

import (
	"context"
	"sync"
)

// lockFile, where flock is missing, orders the jobs of this worker alone.
type lockFile struct{ mu sync.RWMutex }

func machineLock(dir string) (*lockFile, error) { return &lockFile{}, nil }

func (l *lockFile) Close() error { return nil }

func (l *lockFile) shared(ctx context.Context) (func(), error) {
	l.mu.RLock()
	return l.mu.RUnlock, nil
}

func (l *lockFile) exclusive(ctx context.Context) (func(), error) {
	l.mu.Lock()
	return l.mu.Unlock, nil
}
