// Package histgen generates random histories of multi-word reads (MwR),
// multi-word compare-and-swaps (MwCAS, whose failures may report the values
// they read) and multi-word swaps (MwSwap) with crashes, from an explicit
// seed, for pmlin's tests and benchmarks.
//
// Why: the graph-based analyzer (Cepeda et al., OPODIS 2019) is validated by
// comparing it with an exact checker on many thousands of small random
// histories, and it is benchmarked on histories of millions of operations.
// Both need inputs that are reproducible (same seed, same bytes), well formed
// (docs/history-format.md), faithful to the paper's Assumptions 1 and 2,
// and, for the comparison, both linearizable and not, covering the cases
// where a careless analyzer goes wrong: stale and torn reads, spurious and
// misattributed CAS failures, writes lost by a crash, crashed operations
// whose effect appears late (which separates the strict, recoverable and
// durable completion rules), real-time reorderings, swaps that replace a
// value already replaced (Figure 10 of the OPODIS paper), and failures that
// report stale values or contradict themselves.
//
// What:
//
//   - Small simulates a linearizable execution in memory: processes
//     interleave invocations, atomic linearization points and responses;
//     crashes interrupt pending operations, and a crashed CAS may take effect
//     as late as the chosen history.Mode allows.
//   - Mutate turns a history into a modified copy that is usually (for some
//     kinds, certainly) not linearizable; Random combines a base history with
//     zero to two mutations so that about half of its outputs are
//     linearizable.
//   - WriteLarge streams a linearizable history of millions of operations to
//     an io.Writer in O(processes + words) memory, optionally with exactly
//     one planted violation, for benchmarks of the analyzer.
//   - Validate and CheckAssumptions check what the generators promise, so
//     tests can assert it.
//
// All randomness comes from math/rand/v2's PCG seeded by the caller; nothing
// reads the clock or global state.
package histgen
