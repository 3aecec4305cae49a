package memplan_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loom-go/loom/fusion/memplan"
)

func place(t *testing.T, bufs []memplan.Buffer, align int64) *memplan.Plan {
	t.Helper()
	p, err := memplan.Place(bufs, align)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Check(); err != nil {
		t.Fatalf("%v\n%s", err, p)
	}
	return p
}

func offsets(p *memplan.Plan) map[string]int64 {
	m := map[string]int64{}
	for _, q := range p.Places {
		m[q.Name] = q.Offset
	}
	return m
}

// A chain of equal buffers needs two slots: A and C are never live together.
func TestChain(t *testing.T) {
	const kb = 1024
	p := place(t, []memplan.Buffer{
		{Name: "A", Size: kb, First: 0, Last: 1},
		{Name: "B", Size: kb, First: 1, Last: 2},
		{Name: "C", Size: kb, First: 2, Last: 3},
	}, 64)
	off := offsets(p)
	if off["A"] != off["C"] || off["A"] == off["B"] {
		t.Errorf("offsets %v: want A and C shared, B apart\n%s", off, p)
	}
	if p.Peak != 2*kb || p.Naive != 3*kb {
		t.Errorf("peak %d naive %d, want %d and %d", p.Peak, p.Naive, 2*kb, 3*kb)
	}
}

// The biggest buffer goes first, at 0; smaller ones fill the gaps, and a
// zero-size buffer sits at 0 beside everything.
func TestGreedyBySize(t *testing.T) {
	p := place(t, []memplan.Buffer{
		{Name: "small", Size: 10, First: 0, Last: 0},
		{Name: "big", Size: 100, First: 0, Last: 2},
		{Name: "empty", Size: 0, First: 0, Last: 5},
		{Name: "late", Size: 50, First: 3, Last: 4},
		{Name: "mid", Size: 40, First: 1, Last: 3},
	}, 16)
	want := map[string]int64{"big": 0, "late": 0, "mid": 112, "small": 112, "empty": 0}
	if got := offsets(p); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("offsets %v, want %v\n%s", got, want, p)
	}
	if p.Peak != 160 || p.Naive != 112+16+64+48 {
		t.Errorf("peak %d naive %d\n%s", p.Peak, p.Naive, p)
	}
	for i, name := range []string{"small", "big", "empty", "late", "mid"} {
		if p.Places[i].Name != name {
			t.Errorf("Places[%d] = %q, want %q (input order)", i, p.Places[i].Name, name)
		}
	}
}

func TestEmpty(t *testing.T) {
	p := place(t, nil, 1)
	if p.Peak != 0 || p.Naive != 0 || len(p.Places) != 0 {
		t.Errorf("empty plan: %+v", p)
	}
}

// TestRandom checks random plans against an oracle written here, without
// Check: step by step, buffers live at the same step are disjoint, and the
// peak lies between the largest live total and the naive sum.
func TestRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	aligns := []int64{1, 8, 64, 256, 4096}
	for set := range 300 {
		const steps = 20
		bufs := make([]memplan.Buffer, r.IntN(41))
		for i := range bufs {
			first := r.IntN(steps)
			size := r.Int64N(4 << 20)
			if r.IntN(10) == 0 {
				size = 0
			}
			bufs[i] = memplan.Buffer{Name: fmt.Sprint("b", i), Size: size, First: first, Last: first + r.IntN(steps-first)}
		}
		align := aligns[r.IntN(len(aligns))]
		p, err := memplan.Place(bufs, align)
		if err != nil {
			t.Fatalf("set %d: %v", set, err)
		}
		if len(p.Places) != len(bufs) {
			t.Fatalf("set %d: %d places for %d buffers", set, len(p.Places), len(bufs))
		}
		var lower, naive int64
		for i, q := range p.Places {
			b := bufs[i]
			if q.Name != b.Name || q.Size != b.Size || q.First != b.First || q.Last != b.Last {
				t.Fatalf("set %d: place %d is %+v for buffer %+v", set, i, q, b)
			}
			if q.Offset < 0 || q.Offset%align != 0 || q.Offset+q.Size > p.Peak {
				t.Fatalf("set %d: %s at %d size %d, align %d, peak %d", set, q.Name, q.Offset, q.Size, align, p.Peak)
			}
			naive += (b.Size + align - 1) / align * align
		}
		for s := range steps {
			var total int64
			var live []memplan.Placement
			for _, q := range p.Places {
				if q.First <= s && s <= q.Last && q.Size > 0 {
					total += q.Size
					live = append(live, q)
				}
			}
			lower = max(lower, total)
			for i, a := range live {
				for _, b := range live[i+1:] {
					if a.Offset < b.Offset+b.Size && b.Offset < a.Offset+a.Size {
						t.Fatalf("set %d: step %d: %s [%d,+%d) overlaps %s [%d,+%d)\n%s",
							set, s, a.Name, a.Offset, a.Size, b.Name, b.Offset, b.Size, p)
					}
				}
			}
		}
		if p.Naive != naive || p.Peak < lower || p.Peak > p.Naive || p.Peak%align != 0 {
			t.Fatalf("set %d: peak %d naive %d, want naive %d and lower bound %d <= peak <= naive, aligned to %d",
				set, p.Peak, p.Naive, naive, lower, align)
		}
		if err := p.Check(); err != nil {
			t.Fatalf("set %d: %v", set, err)
		}
	}
}

func TestPlaceErrors(t *testing.T) {
	ok := memplan.Buffer{Name: "ok", Size: 8, First: 0, Last: 1}
	for _, tc := range []struct {
		name  string
		bufs  []memplan.Buffer
		align int64
		want  string
	}{
		{"align zero", []memplan.Buffer{ok}, 0, "align 0"},
		{"align negative", []memplan.Buffer{ok}, -8, "align -8"},
		{"align not power of two", []memplan.Buffer{ok}, 24, "align 24"},
		{"align huge", []memplan.Buffer{ok}, 1 << 62, "align"},
		{"last before first", []memplan.Buffer{ok, {Name: "back", Size: 8, First: 3, Last: 2}}, 8, `"back"`},
		{"negative size", []memplan.Buffer{{Name: "neg", Size: -1, First: 0, Last: 0}}, 8, `"neg"`},
		{"duplicate", []memplan.Buffer{ok, {Name: "x", Size: 1}, {Name: "ok", Size: 1}}, 8, `duplicate buffer "ok"`},
		{"size huge", []memplan.Buffer{{Name: "huge", Size: 1<<60 + 1}}, 8, `"huge"`},
		{"total overflows", []memplan.Buffer{
			{Name: "g0", Size: 1 << 60}, {Name: "g1", Size: 1 << 60}, {Name: "g2", Size: 1 << 60}, {Name: "g3", Size: 1 << 60},
			{Name: "g4", Size: 1 << 60}, {Name: "g5", Size: 1 << 60}, {Name: "g6", Size: 1 << 60}, {Name: "g7", Size: 1 << 60},
		}, 8, `overflows int64 at buffer "g7"`},
	} {
		p, err := memplan.Place(tc.bufs, tc.align)
		if err == nil {
			t.Errorf("%s: no error, plan\n%s", tc.name, p)
			continue
		}
		if !errors.Is(err, memplan.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q, want one wrapping ErrInvalid and containing %s", tc.name, err, tc.want)
		}
	}
}

// Seven buffers of 1<<60 fit in an int64; all live at once, they stack.
func TestHugeSizes(t *testing.T) {
	bufs := make([]memplan.Buffer, 7)
	for i := range bufs {
		bufs[i] = memplan.Buffer{Name: fmt.Sprint("h", i), Size: 1 << 60}
	}
	p := place(t, bufs, 1<<60)
	if p.Peak != 7<<60 || p.Naive != 7<<60 {
		t.Errorf("peak %d naive %d, want %d", p.Peak, p.Naive, int64(7<<60))
	}
}

func TestCheckFinds(t *testing.T) {
	good := func() *memplan.Plan {
		return place(t, []memplan.Buffer{
			{Name: "A", Size: 64, First: 0, Last: 1},
			{Name: "B", Size: 64, First: 1, Last: 2},
			{Name: "C", Size: 64, First: 2, Last: 3},
		}, 32)
	}
	p := good()
	p.Places[1].Offset = p.Places[0].Offset + 32 // B now overlaps A and C
	err := p.Check()
	if oe, ok := errors.AsType[*memplan.OverlapError](err); !ok || oe.A.Name != "A" || oe.B.Name != "B" {
		t.Errorf("overlap: got %v, want an OverlapError naming A and B", err)
	}
	for _, tc := range []struct {
		name string
		edit func(p *memplan.Plan)
		want string
	}{
		{"misaligned", func(p *memplan.Plan) { p.Places[2].Offset += 8 }, `"C": offset 8`},
		{"past peak", func(p *memplan.Plan) { p.Peak -= 32 }, "past peak"},
		{"negative offset", func(p *memplan.Plan) { p.Places[0].Offset = -32 }, `"A"`},
		{"bad align", func(p *memplan.Plan) { p.Align = 3 }, "align 3"},
		{"overflowing end", func(p *memplan.Plan) { p.Places[0].Offset = 1 << 62; p.Places[0].Size = 1<<63 - 1 }, "past peak"},
	} {
		p := good()
		tc.edit(p)
		err := p.Check()
		if !errors.Is(err, memplan.ErrPlan) || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("%s: error %v, want one wrapping ErrPlan and containing %s", tc.name, err, tc.want)
		}
	}
}

func Example() {
	// Kernel 0 writes x, kernel 1 reads x and writes y, kernel 2 reads y
	// and writes z, kernel 3 reads z and w; w is needed throughout.
	p, err := memplan.Place([]memplan.Buffer{
		{Name: "x", Size: 4096, First: 0, Last: 1},
		{Name: "y", Size: 4096, First: 1, Last: 2},
		{Name: "z", Size: 2000, First: 2, Last: 3},
		{Name: "w", Size: 100, First: 0, Last: 3},
	}, 256)
	if err != nil {
		panic(err)
	}
	fmt.Print(p)
	fmt.Println(p.Check())
	// Output:
	// name  offset  size  live
	// x     0       4096  0..1
	// z     0       2000  2..3
	// y     4096    4096  1..2
	// w     8192    100   0..3
	// peak 8448 bytes (naive 10496)
	// <nil>
}
