package schedule_test

import (
	"flag"
	"os"
	"testing"

	"github.com/loom-go/loom/internal/allocprof"
	"github.com/loom-go/loom/schedule"
)

// TestMain runs every test of the package with the translation validator
// on: each primitive's result is checked independently of the primitive's
// own proof, and a disagreement fails the step with ErrInternal. Go's
// sampling of allocations is off (see allocprof): the long adversarial run
// slowed down hour by hour with it.
func TestMain(m *testing.M) {
	flag.Parse()
	allocprof.Off()
	schedule.SetValidation(true)
	os.Exit(m.Run())
}
