package bench

import (
	"errors"

	"github.com/loom-go/loom/schedule"
)

var errTODO = errors.New("no hand schedule yet")

func handRMSNorm(s *schedule.Schedule, c Config) error { return errTODO }
func handSoftmax(s *schedule.Schedule, c Config) error { return errTODO }
func handChain(s *schedule.Schedule, c Config) error   { return errTODO }
func handConv2D(s *schedule.Schedule, c Config) error  { return errTODO }
