package schedule_test

import "slices"

// corpusSeeds returns the seeds a corpus-wide test runs function i of its
// corpus at: with -long, every seed from 1 to full; otherwise per seeds of
// 1 to spread, taken in turn along the corpus (function 0 the first per,
// function 1 the next), so that the default run still checks every
// function and, across the corpus, every seed from 1 to spread (the seeds
// each function ran at before the test had a quick default). The quick
// run checks the same property on a slice of the long run's cases.
func corpusSeeds(i, per, spread, full int) []uint64 {
	n := per
	if *long {
		n = full
	}
	out := make([]uint64, n)
	for k := range out {
		if *long {
			out[k] = uint64(k + 1)
		} else {
			out[k] = uint64(1 + (i*per+k)%spread)
		}
	}
	return out
}

// runsAt reports whether function i of a corpus runs at seed under
// corpusSeeds(i, per, spread, full).
func runsAt(i int, seed uint64, per, spread, full int) bool {
	return slices.Contains(corpusSeeds(i, per, spread, full), seed)
}

// maxSeed returns the largest seed corpusSeeds gives any function.
func maxSeed(spread, full int) uint64 {
	if *long {
		return uint64(full)
	}
	return uint64(spread)
}
