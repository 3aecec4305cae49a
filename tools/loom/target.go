package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"

	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
)

// checkTarget checks -mcpu and -mattr against what LLVM knows for this
// machine's target triple (llc -mcpu=help), before anything is compiled:
// an unknown CPU made every compile print the same warning, and an
// unknown feature was silently ignored. cpu "" and "native" mean the
// host; attrs is "+name,-name,...". Without llc nothing is checked (the
// compile says llc is missing).
func checkTarget(cpu, attrs string) error {
	if cpu == "" && attrs == "" {
		return nil
	}
	known, err := llcTarget()
	if err != nil {
		return nil
	}
	triple := llvm.Host().Triple
	if cpu != "" && cpu != "native" && !slices.Contains(known.cpus, cpu) {
		return fmt.Errorf("-mcpu %s: LLVM does not know this CPU for %s (llc -mtriple=%s -mcpu=help lists them)", cpu, triple, triple)
	}
	if attrs == "" {
		return nil
	}
	for _, a := range strings.Split(attrs, ",") {
		name := strings.TrimLeft(a, "+-")
		switch {
		case a == "" || name == "":
			return fmt.Errorf("-mattr %s: an empty feature; want +name or -name, comma-separated", attrs)
		case a[0] != '+' && a[0] != '-':
			return fmt.Errorf("-mattr %s: write +%s to enable %s, or -%s to disable it", attrs, a, a, a)
		case len(a)-len(name) != 1:
			return fmt.Errorf("-mattr %s: %s: want one + or - before a feature's name", attrs, a)
		case !slices.Contains(known.features, name):
			return fmt.Errorf("-mattr %s: LLVM does not know the feature %s for %s (llc -mtriple=%s -mattr=help lists them)", attrs, name, triple, triple)
		}
	}
	return nil
}

// llcKnows is what llc lists for a target: its CPUs and its features.
type llcKnows struct {
	cpus, features []string
}

// llcTarget asks llc, once, for the CPUs and features of the host's
// triple.
var llcTarget = sync.OnceValues(func() (*llcKnows, error) {
	tc, err := native.FindToolchain()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(tc.LLC, "-mtriple="+llvm.Host().Triple, "-mcpu=help")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, err
	}
	k := parseLLCHelp(out.String())
	if len(k.cpus) == 0 || len(k.features) == 0 {
		return nil, fmt.Errorf("llc -mcpu=help listed no CPUs or features")
	}
	return k, nil
})

// parseLLCHelp reads llc -mcpu=help's lists: "Available CPUs for this
// target:" and "Available features for this target:", one "  name -
// description" a line.
func parseLLCHelp(help string) *llcKnows {
	k := &llcKnows{}
	var list *[]string
	for _, line := range strings.Split(help, "\n") {
		switch {
		case strings.HasPrefix(line, "Available CPUs"):
			list = &k.cpus
			continue
		case strings.HasPrefix(line, "Available features"):
			list = &k.features
			continue
		case !strings.HasPrefix(line, "  "):
			if strings.TrimSpace(line) != "" {
				list = nil
			}
			continue
		}
		if name, _, ok := strings.Cut(strings.TrimSpace(line), " - "); ok && list != nil {
			*list = append(*list, strings.TrimSpace(name))
		}
	}
	return k
}
