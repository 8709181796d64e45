package mwcas

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

var mutantsFlag = flag.Bool("mutants", false, "run the planted-bug exposure search (slow; not part of default runs)")

// interleavingPlans are workloads whose bugs need a particular interleaving
// and no crash; they are run under many schedule seeds.
func interleavingPlans() []plan {
	return []plan{
		{name: "a failing cas rolls back a word another cas expects", words: 24, workers: [][]step{
			{cas([]uint64{0, 9}, []uint64{0, 5}, []uint64{1, 2})},
			{cas([]uint64{0}, []uint64{0}, []uint64{3})},
		}},
		{name: "cas and two readers", words: 24, workers: [][]step{
			{cas([]uint64{0, 9}, []uint64{0, 0}, []uint64{1, 2})},
			{read(0, 9)},
			{read(9, 0)},
		}},
		{name: "a swap twice and another swap (Figure 10)", words: 24, workers: [][]step{
			{swap(0), swap(0)},
			{swap(0, 9)},
		}},
	}
}

// exposure searches for a violation of mutant mu: first crash sweeps of the
// one-worker plans, then of the two-worker plans, then seeded schedules of
// the interleaving plans, then random workloads with a random crash.
func exposure(mu string) string {
	for _, p := range singlePlans() {
		if res := sweep(run{plan: p, mutant: mu}, 3); res.violations > 0 {
			return fmt.Sprintf("crash sweep: %d of %d crash points (%s); first: %s", res.violations, res.points, policies(res), res.first)
		}
	}
	for _, p := range concurrentPlans() {
		for seed := range uint64(3) {
			if res := sweep(run{plan: p, seed: seed + 1, mutant: mu}, 2); res.violations > 0 {
				return fmt.Sprintf("crash sweep: %d of %d crash points (%s); first: %s", res.violations, res.points, policies(res), res.first)
			}
		}
	}
	for _, p := range concurrentPlans() {
		for seed := range uint64(40) {
			if res := sweep(run{plan: p, seed: seed + 4, mutant: mu}, 2); res.violations > 0 {
				return fmt.Sprintf("crash sweep: %d of %d crash points (%s); first: %s", res.violations, res.points, policies(res), res.first)
			}
		}
	}
	for _, p := range interleavingPlans() {
		found, first := 0, ""
		const seeds = 3000
		for seed := range uint64(seeds) {
			if o := execute(run{plan: p, seed: seed, mutant: mu}, false); o.violation != "" {
				found++
				if first == "" {
					first = fmt.Sprintf("%s, schedule seed %d: %s", p.name, seed, o.violation)
				}
			}
		}
		if found > 0 {
			return fmt.Sprintf("interleaving, no crash: %d of %d schedules; first: %s", found, seeds, first)
		}
	}
	for seed := range uint64(3000) {
		rng := rand.New(rand.NewPCG(seed, 11))
		p := randomPlan(rng, 2+rng.IntN(2), 2)
		rn := run{plan: p, seed: seed, mutant: mu}
		if o := execute(rn, false); o.violation != "" {
			return fmt.Sprintf("random workload, schedule seed %d, no crash: %s", seed, o.violation)
		}
	}
	return ""
}

func policies(res sweepResult) string {
	var ps []string
	for p, n := range res.byPolicy {
		ps = append(ps, fmt.Sprintf("%s %d", p, n))
	}
	sort.Strings(ps)
	return strings.Join(ps, ", ")
}

// TestMutantsExposed checks that every planted bug is found by the tests'
// checker, and reports what found it. Run with -mutants.
func TestMutantsExposed(t *testing.T) {
	if !*mutantsFlag {
		t.Skip("planted bugs are exercised only with -mutants")
	}
	for _, mu := range Mutants() {
		t.Run(mu.Name, func(t *testing.T) {
			how := exposure(mu.Name)
			if how == "" {
				t.Fatalf("mutant %s not exposed", mu.Name)
			}
			t.Logf("%s: %s", mu.Name, how)
		})
	}
}

// TestExposureControl runs the same search on the correct algorithm, which
// must come out clean: the checker does not cry wolf. Run with -mutants.
func TestExposureControl(t *testing.T) {
	if !*mutantsFlag {
		t.Skip("the exposure search runs only with -mutants")
	}
	if how := exposure(""); how != "" {
		t.Fatalf("the correct algorithm flagged: %s", how)
	}
}
