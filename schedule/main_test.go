package schedule_test

import (
	"os"
	"testing"

	"github.com/loom-go/loom/schedule"
)

// TestMain runs every test of the package with the translation validator
// on: each primitive's result is checked independently of the primitive's
// own proof, and a disagreement fails the step with ErrInternal.
func TestMain(m *testing.M) {
	schedule.SetValidation(true)
	os.Exit(m.Run())
}
