package main

import (
	"strings"
	"testing"
)

// The queue's flags refuse what they cannot use, with the reason.
func TestQueueFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"worker", "-target", "x"}, 2, "-nats URL is required"},
		{[]string{"worker", "-nats", "ftp://host:21"}, 1, `scheme "ftp"`},
		{[]string{"worker", "-nats", "nats://127.0.0.1:1", "-target", "a.b"}, 1, "target"},
		{[]string{"tune", "-workload", "gemm", "-size", "64", "-workers", "2"}, 2, "need -nats"},
		{[]string{"tune", "-workload", "gemm", "-size", "64", "-nats", "http://host"}, 1, `scheme "http"`},
		{[]string{"tune", "-workload", "gemm", "-size", "64", "-nats", "nats://127.0.0.1:4222", "-creds", "a", "-nkey", "b"}, 1, "give one"},
	} {
		code, _, errs := runLoom(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("loom %s: exit %d, %q; want exit %d and %q", strings.Join(c.args, " "), code, errs, c.code, c.want)
		}
	}
}
