package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/pmlin/pmlin/internal/crash"
	"github.com/pmlin/pmlin/internal/driver"
)

// structureFlags fits the flags of pmlin run and fuzz to the target c
// names: a data structure (target.Target.Model) has no words, k, reads,
// swaps or failures that report values, so setting one of those is a
// usage error, as is --keys for a target whose workload has no keys; and
// a data structure's run is shorter by default (crash.DefaultObjectOps:
// the exact checker decides its history by search).
func structureFlags(fs *pflag.FlagSet, c *crash.Config) error {
	if c.Target == nil {
		return nil
	}
	m := c.Target.Model
	if m == "" {
		if fs.Changed("keys") {
			return fmt.Errorf("--keys is for data-structure targets of a map or set model; target %s is a primitive of read and cas (see pmlin targets)", c.Target.Name)
		}
		return nil
	}
	var bad []string
	fs.Visit(func(f *pflag.Flag) {
		if crash.PrimitiveFlag(f.Name) {
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		return fmt.Errorf("%s: not for target %s, a data structure of model %s, whose workload is its model's operations (--ops, --threads, and --keys for a map or set)", strings.Join(bad, ", "), c.Target.Name, m)
	}
	name, _, _ := strings.Cut(m, " ")
	if fs.Changed("keys") && !driver.KeyedModel(name) {
		return fmt.Errorf("--keys: target %s's model %s has no keys (--keys is for a map or set)", c.Target.Name, m)
	}
	if !fs.Changed("ops") {
		c.Ops = crash.DefaultObjectOps
	}
	return nil
}

// objectText says what a data structure's workload is: "operations of
// model queue (enq 3, deq 2)", with its keys.
func objectText(c crash.Config) string {
	w, err := c.ObjectWorkload()
	if err != nil {
		return "operations of model " + c.Target.Model
	}
	parts := make([]string, len(w.Ops))
	for i, op := range w.Ops {
		parts[i] = fmt.Sprintf("%s %d", op, w.Weights[i])
	}
	s := fmt.Sprintf("operations of model %s (%s)", c.Target.Model, strings.Join(parts, ", "))
	if driver.KeyedModel(w.Model) {
		s += fmt.Sprintf(" over %d keys", w.Keys)
	}
	return s
}
