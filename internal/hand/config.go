package hand

import (
	"errors"
	"fmt"
)

// Config is what a schedule may depend on.
type Config struct {
	Threads    int
	VectorBits int // SIMD register width of the target
}

// ErrConfig is wrapped by the error of a schedule given a Config it
// cannot be made for.
var ErrConfig = errors.New("hand: unusable configuration")

// maxVectorBits is the widest vector the schedules can be cut to: the
// matrix multiply's register tile, two vectors of float32 lanes, must fit
// its 256-column panel.
const maxVectorBits = 4096

// check returns an error wrapping ErrConfig when the schedules cannot be
// made for c: a vector width that is not a power of two from 32 bits (one
// float32 lane) to 4096, or a negative thread count.
func (c Config) check() error {
	if v := c.VectorBits; v < 32 || v > maxVectorBits || v&(v-1) != 0 {
		return fmt.Errorf("%w: vector width %d bits: want a power of two from 32 to %d", ErrConfig, v, maxVectorBits)
	}
	if c.Threads < 0 {
		return fmt.Errorf("%w: %d threads: want at least 0", ErrConfig, c.Threads)
	}
	return nil
}
