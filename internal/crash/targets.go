package crash

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pmlin/pmlin/target"
)

// What the harness asks of the targets it is given: the one a run names,
// its mutant and its parameters.

// checkMutant reports whether name is "" (the correct code) or one of
// t's mutants.
func checkMutant(t *target.Target, name string) error {
	if name == "" || slices.ContainsFunc(t.Mutants, func(m target.Mutant) bool { return m.Name == name }) {
		return nil
	}
	names := make([]string, len(t.Mutants))
	for i, m := range t.Mutants {
		names[i] = m.Name
	}
	known := "it has none"
	if len(names) > 0 {
		known = "known: " + strings.Join(names, ", ")
	}
	return fmt.Errorf("unknown mutant %q of target %s (%s)", name, t.Name, known)
}

// resolveParams completes the parameters set by the user (set, by name)
// with t's defaults. A parameter the target does not have is an error.
func resolveParams(t *target.Target, set map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(t.Params))
	for _, p := range t.Params {
		out[p.Name] = p.Default
	}
	for name, v := range set {
		if _, ok := out[name]; !ok {
			return nil, fmt.Errorf("--%s is not a parameter of target %s%s", name, t.Name, paramList(t))
		}
		out[name] = v
	}
	return out, nil
}

func paramList(t *target.Target) string {
	if len(t.Params) == 0 {
		return " (it has none)"
	}
	names := make([]string, len(t.Params))
	for i, p := range t.Params {
		names[i] = "--" + p.Name
	}
	return " (its parameters: " + strings.Join(names, ", ") + ")"
}

// FindTarget returns the target of the given name among ts.
func FindTarget(ts []*target.Target, name string) (*target.Target, error) {
	names := make([]string, 0, len(ts))
	for _, t := range ts {
		if t.Name == name {
			return t, nil
		}
		names = append(names, t.Name)
	}
	return nil, fmt.Errorf("unknown target %q (known: %s)", name, strings.Join(names, ", "))
}
