package sysmem

import (
	"strings"
	"testing"
)

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 3 << 30: "3.0 GiB", 1536 << 20: "1.5 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	if Total() == 0 {
		t.Skip("no /proc/meminfo")
	}
	if Available() <= 0 || Available() > Total() {
		t.Errorf("available %d of total %d", Available(), Total())
	}
	if err := Check("a small job", 1<<20); err != nil {
		t.Errorf("1 MiB: %v", err)
	}
	err := Check("a huge job", 1<<62)
	if err == nil || !strings.Contains(err.Error(), "a huge job needs 4.0 EiB of memory") {
		t.Errorf("4 EiB: %v", err)
	}
}
