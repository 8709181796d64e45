// Package lin decides linearizability of a version 2 history
// (docs/history-format.md) for objects of any model (package model),
// exactly, in each of the three crash modes.
//
// # What it decides
//
// A history is linearizable when some sequence of its operations holds
// every operation that returned and at most once each optional one (cut
// off by a crash or the end, or answered "?"), respects real time, each
// optional operation's window (window, the one statement of the rule)
// and, in recoverable mode, process order (processOrder, likewise), and
// replays each object's operations on its model from one of its initial
// states with every result as recorded. Windows are intervals of
// positions, so without process order each object is checked alone
// (locality, Herlihy and Wing), and an object whose model partitions its
// operations (a map by key, a set by value, words by connected components
// of addresses) partition by partition: Horn and Kroening's
// P-compositionality ("Faster linearizability checking via
// P-compositionality", FORTE 2015, Section 3). Groups that process order
// links are searched together, as one part whose state is the tuple of
// theirs.
//
// # How
//
// Each object, or each partition, is one search: Wing and Gong's search
// over the operations that may be linearised first, with Lowe's memo of
// configurations (Lowe, "Testing for linearizability", Concurrency and
// Computation 2017, Sections 3 and 3.1, the "WGL" graph search that
// Porcupine also implements); a configuration is the set of operations
// done and the model's state as Model.Key says it. An optional operation
// takes effect with any result the model allows, or is left out when its
// window closes (as late as possible, in the spirit of Lowe's
// just-in-time linearisation, Section 4: leaving out earlier gains
// nothing). An operation the model calls read-only (Model.ReadOnly) is
// placed as soon as it may, never later: any order that places it later
// stays one when it moves there (the reduction package exact makes for
// reads and failed CAS). The searches run on
// GOMAXPROCS goroutines. Each has a budget of states; all of them
// together a bound on the memory their memos hold: beyond either, the
// answer is Undecided with the reason, never a guess.
//
// Before the search, an unbounded queue's, stack's or priority queue's
// optional inserts whose value no operation returned are left out
// (unobserved.go: that changes no verdict); in durable and recoverable
// mode their windows would otherwise stay open to the end of the history.
//
// # The queue engine
//
// An unbounded queue of the built-in model whose operations all returned,
// whose enqueues all answered ok and enqueued distinct values, is decided
// instead by Lowe's queue-oriented algorithm (same paper, Section 5,
// Figure 3: pair a minimal enqueue with the deq-minimal dequeue of its
// value, delay the other dequeues, repeat), in O(n (p + log n)) steps for
// n operations and p pending at once where no deq -> empty conflicts
// (Definition 11), branching only where one does (queue.go). Anything
// else about a queue is the search's (Options.Generic forces it);
// ObjectResult.Engine says which answered.
//
// A violation is explained as data (Explanation): the longest order the
// search found and the model's state after it, the operation that could
// not come next, and a set of the object's operations that no order
// explains, shrunk by removing operations and checking again until no
// single one can go.
package lin
