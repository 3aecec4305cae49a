package main

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// parseBuckets reads -buckets NAME=B0,B1,...,Bk: the buckets B0..B1-1,
// ..., Bk-1..Bk of size NAME.
func parseBuckets(spec string) (string, [][2]int64, error) {
	name, list, ok := strings.Cut(spec, "=")
	if !ok || name == "" || list == "" {
		return "", nil, fmt.Errorf("-buckets %q: want NAME=B0,B1,...,Bk", spec)
	}
	var bounds []int64
	for _, f := range strings.Split(list, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || v < 1 || v > math.MaxInt32 {
			return "", nil, fmt.Errorf("-buckets %q: %q is not a size from 1 to %d", spec, f, math.MaxInt32)
		}
		if len(bounds) > 0 && v <= bounds[len(bounds)-1] {
			return "", nil, fmt.Errorf("-buckets %q: the bounds must grow (%d after %d)", spec, v, bounds[len(bounds)-1])
		}
		bounds = append(bounds, v)
	}
	if len(bounds) < 2 {
		return "", nil, fmt.Errorf("-buckets %q: want at least two bounds (one bucket)", spec)
	}
	var out [][2]int64
	for i := 0; i+1 < len(bounds); i++ {
		hi := bounds[i+1] - 1
		if i+2 == len(bounds) {
			hi = bounds[i+1]
		}
		out = append(out, [2]int64{bounds[i], hi})
	}
	return name, out, nil
}

// rangeBuckets turns -sizes NAME=LO..HI into -buckets' form: bounds that
// double from LO up to 16, then grow 4 times, then HI. Below 16 a size
// meets the register tile's rows or a vector's lanes, and each doubling
// wants its own schedule (a matrix of 3 rows is best tiled 3 high, one
// of 7 rows not); above, a schedule tuned over a bucket is within a few
// percent of the one tuned at each size when the bounds are 4 apart (8
// apart, the sweep of [M,1024]x[1024,1024] lost up to 30% at M=3).
// Neighbours whose tuned schedules agree are merged afterwards
// (autotune.Database.Buckets).
func rangeBuckets(spec string) (string, error) {
	name, rng, ok := strings.Cut(spec, "=")
	los, his, ok2 := strings.Cut(rng, "..")
	lo, err1 := strconv.ParseInt(los, 10, 64)
	hi, err2 := strconv.ParseInt(his, 10, 64)
	if !ok || !ok2 || name == "" || err1 != nil || err2 != nil || lo < 1 || hi <= lo || hi > math.MaxInt32 {
		return "", fmt.Errorf("-sizes %q: want NAME=LO..HI, 1 <= LO < HI <= %d", spec, math.MaxInt32)
	}
	bounds := []string{strconv.FormatInt(lo, 10)}
	for b := lo; ; {
		if b < 16 {
			b *= 2
		} else {
			b *= 4
		}
		if b >= hi {
			break
		}
		bounds = append(bounds, strconv.FormatInt(b, 10))
	}
	bounds = append(bounds, strconv.FormatInt(hi, 10))
	return name + "=" + strings.Join(bounds, ","), nil
}

// specializeBucket reads -specialize NAME=VALUE: the bucket of that one
// value.
func specializeBucket(spec string) (string, [][2]int64, error) {
	name, v, ok := strings.Cut(spec, "=")
	n, err := strconv.ParseInt(v, 10, 64)
	if !ok || name == "" || err != nil || n < 1 || n > math.MaxInt32 {
		return "", nil, fmt.Errorf("-specialize %q: want NAME=VALUE, 1 <= VALUE <= %d", spec, math.MaxInt32)
	}
	return name, [][2]int64{{n, n}}, nil
}

// bucketSizes are the values of a bucket's size a candidate is measured
// at: its bounds and their geometric middle.
func bucketSizes(b [2]int64) []int64 {
	mid := int64(math.Round(math.Sqrt(float64(b[0]) * float64(b[1]))))
	out := []int64{b[0], mid, b[1]}
	slices.Sort(out)
	return slices.Compact(out)
}

// bucketJobs makes each job whose function has size name into one job
// per bucket of it; the others stay as they are.
func bucketJobs(jobs []*job, name string, buckets [][2]int64) ([]*job, error) {
	var out []*job
	any := false
	for _, j := range jobs {
		if j.Case.Func.Size(name) == nil {
			out = append(out, j)
			continue
		}
		any = true
		for _, b := range buckets {
			bj := *j
			bj.Bucket = map[string][2]int64{name: b}
			for _, v := range bucketSizes(b) {
				sizes := maps.Clone(j.Case.Sizes)
				if sizes == nil {
					sizes = map[string]int64{}
				}
				sizes[name] = v
				c := j.Case
				c.Sizes = sizes
				if err := checkCase(c); err != nil {
					return nil, fmt.Errorf("bucket %s=%d..%d, measured at %s=%d: %v", name, b[0], b[1], name, v, err)
				}
				bj.SizeSets = append(bj.SizeSets, sizes)
			}
			bj.Case.Sizes = bj.SizeSets[0]
			bj.Shape = fmt.Sprintf("%s=%d..%d", name, b[0], b[1])
			if others := otherSizes(j.Case.Sizes, name); others != "" {
				bj.Shape += "," + others
			}
			if len(j.fixed) > 0 {
				bj.Shape += "," + strings.Join(j.fixed, ",")
			}
			out = append(out, &bj)
		}
	}
	if !any {
		return nil, fmt.Errorf("-buckets: no function to tune has a size %s", name)
	}
	return out, nil
}

// otherSizes prints the sizes but name, in name order.
func otherSizes(sizes map[string]int64, name string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(sizes)) {
		if k != name {
			parts = append(parts, fmt.Sprintf("%s=%d", k, sizes[k]))
		}
	}
	return strings.Join(parts, ",")
}

// specNames are the distinct names of the sizes flags like -buckets,
// -sizes and -sweep give (NAME=...), in order; empty flags name none.
func specNames(specs ...string) []string {
	var names []string
	for _, spec := range specs {
		name, _, ok := strings.Cut(spec, "=")
		if ok && name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}
