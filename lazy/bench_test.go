package lazy

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkCallOverhead runs a small attention block (so that the
// kernels are short and the overhead shows) found compiled: per call, the
// recording of its operations, the capture, the lookup and the kernels;
// it reports the share of the call spent outside the kernels.
func BenchmarkCallOverhead(b *testing.B) {
	d := newDevice(b)
	r := rand.New(rand.NewPCG(1, 2))
	wqkv, wo := d.Weight(randomFloats(r, 64*192), 64, 192), d.Weight(randomFloats(r, 64*64), 64, 64)
	in := randomFloats(r, 16*64)
	if err := d.Sync(attention(d, d.From(in, 16, 64), wqkv, wo, 4)); err != nil {
		b.Fatal(err)
	}
	before := d.Stats()
	b.ResetTimer()
	for b.Loop() {
		if err := d.Sync(attention(d, d.From(in, 16, 64), wqkv, wo, 4)); err != nil {
			b.Fatal(err)
		}
	}
	kernels := (d.Stats().Run - before.Run).Seconds() / float64(b.N)
	perCall := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(1e6*(perCall-kernels), "µs-overhead/op")
	b.ReportMetric((perCall-kernels)/kernels, "overhead/kernels")
}
