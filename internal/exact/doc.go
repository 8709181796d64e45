// Package exact decides linearizability of small histories exactly, by search.
// It is the test oracle of the graph-based analyzer (package analyzer), and the
// engine of `pmlin check --exact`.
//
// # What it decides
//
// The object is an array of 64-bit words (initial values History.InitValue)
// with three operations: a multi-word read, which returns the current values
// of its words atomically; a multi-word CAS, which writes all its new values
// if every word holds its expected value and returns ok, and otherwise has no
// effect and returns "fail a" for one word a whose value differs, possibly
// with the values it read ("fail a v1 ... vk": then they are the current
// values of its words); and a multi-word swap, which writes all its new
// values and returns the values they replaced. The blamed word is a gray-box
// output: any differing word may be blamed, so a recorded "fail a" is
// consistent exactly when word a differs from its expected value at the
// linearization point.
//
// A history is linearizable if there is a sequence of its operations such
// that replaying it on the array gives every recorded response, every
// completed operation appears exactly once, and the sequence respects the
// history's order constraints: an operation that responded before another was
// invoked comes first. Operations cut off by a crash (or by the end of the
// history) have no response; "exact" means that every admissible completion of
// them is tried: a pending read is dropped, and a pending CAS or swap is
// either dropped or taken as a success (a swap: replacing whatever its words
// hold then) somewhere after its invocation, no later than its mode allows (history.Mode): before the crash that interrupted it
// (Strict), before every later operation of its own process that is
// linearized (Recoverable: the process's order survives the crash, so when
// the next operation was itself cut off and dropped the constraint holds
// for the one after it), or at any time (Durable, and every mode for an
// operation pending at the end).
// Completing a pending CAS as a failure has no effect, so it is the same as
// dropping it. Unlike the graph method, the checker needs neither of the
// recorder's assumptions of docs/history-format.md: values may repeat and a
// CAS may expect any value.
//
// # How
//
// The search is Wing and Gong's, as refined by Lowe ("Testing for
// linearizability", Concurrency and Computation 2017: just-in-time
// linearization with a memo of visited configurations) and by Horn and
// Kroening ("Faster linearizability checking via P-compositionality",
// FORTE 2015). A configuration is the set of operations already done
// (linearized, or dropped) together with the memory contents; the checker
// explores configurations depth first and never explores one twice, because
// whether a configuration can be completed depends on nothing else. An
// operation may be linearized when every operation that must precede it is
// done. Two reductions keep the search small without losing completeness:
//
//   - An operation without effect (a read or a failed CAS) that may be
//     linearized now and whose response agrees with memory now is linearized
//     at once, without trying alternatives: any linearization that places it
//     later stays valid when it is moved to the present.
//   - A pending CAS or swap is dropped only when it stands in the way of an
//     operation that is otherwise ready. Dropping has no effect, so it can
//     always be postponed to that moment.
//
// # Why partitioning is sound
//
// The history is split into components: two operations are in the same
// component when they share a word. Each component is checked on its own,
// and the history is linearizable if and only if every component is. This is
// the locality of linearizability (Herlihy and Wing) and P-compositionality
// (Horn and Kroening): one direction is immediate; for the other, each
// operation's order constraint is an interval, from its invocation to its
// response (the crash, for a Strict pending CAS; the end of time for one that
// may take effect at any time), and a sequence of one component that
// respects the intervals can be realized by points inside them, so the
// components' sequences merge by point into one sequence that respects every
// interval. Recoverable mode adds constraints that are not intervals: a
// crashed CAS or swap must precede the later operations of its process,
// which may touch other words. Locality is only guaranteed for interval
// orders, so those operations' components are merged with the crashed
// one's, and the constraints stay inside one component, where the merge
// above preserves them.
package exact
