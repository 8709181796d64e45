// Package shrink turns a failing history (millions of operations) into a
// small sub-history that still fails, for a person to read and a test to
// keep. It sits on top of the analyzer (the oracle of every step) and of
// the exact checker (package exact), which confirms small results.
//
// It works in two steps. Extraction picks, from the analysis of the whole
// history (analyzer.Analysis.SubHistory), the anomaly's operations and
// what their edges need: the writers of every value they observed, up to
// the earliest such value per word (which becomes the word's initial
// value, so the chain of writes before it is not needed), the writes that
// replaced those values, the write that won a fork a kept write lost (the
// reason a write after it is unreachable), the sources of failures, and,
// for a failed cas, a read that returned its expected value before it was
// invoked (Assumption 2 of the OPODIS paper). Those lines are re-read from
// the input (history.Extract). When they do not fail on their own, the
// same with every word's chain from its initial value is tried, then the
// whole history (Stats.Whole), so that an extraction that misses
// something costs time, not the shrink. Minimization then re-checks
// candidates with the analyzer until no single operation can be removed:
// it removes chunks of operations, then single ones, crash lines, whole
// words, words of multi-word reads, and a leading write folded into the
// initial values.
//
// A candidate counts as failing when the analyzer accepts it (well formed,
// within the method's assumptions) and finds an anomaly of the kind being
// shrunk that tells the same crash story (Story: when the anomaly's
// evidence involves a crash, so must the candidate's, and when a read
// after the crash found a value its write had replaced, so must one of
// the candidate's), and no anomaly of a kind the whole history did not
// show (removing the writer of a value a kept read returned would
// otherwise turn any failure into a "dangling" artefact). A crash bug thus
// keeps its crash line and the read after it instead of shrinking into
// something that looks like a bug of concurrency. The result is
// 1-minimal: removing any one operation makes it linearizable, ill-formed,
// break an assumption, or fail differently (no anomaly of the kind shrunk,
// one without the story, or one of a new kind).
//
// Write annotates each invocation with its original line ("# line N"), and
// Origins reads those back for reports on the shrunk history. ExactWitness
// does for the exact checker what Anomaly does for the graph method: it
// cuts the operations of a component with no linearization down to a few
// that cannot be ordered on their own, re-checked exactly.
//
// Objects shrinks a version 2 history (objects of any model, decided by
// package lin; the histories of data-structure targets) by delta
// debugging without extraction: the candidates are sets of the input's
// operations, whole groups first (the other objects', a partition's, a
// process's, a crash section's), then chunks halving down to single
// operations, in rounds until one removes nothing. What still fails is
// stated once (objShrinker.fails): the object shrunk is not linearizable
// in the mode, and no result lost its source (lin.Orphans, the rule of
// the checker's own witness). Crashes are not chosen but follow from the
// operations (a crash stays where kept operations lie on both sides), so
// every candidate is well formed and a crash bug keeps the crash between
// the operation it lost and the read that missed it. WriteObjects writes
// the result with each invocation's and crash's original line.
package shrink
