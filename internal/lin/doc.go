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
// else about a queue is the search's.
//
// # The unique-value engine
//
// A built-in map or register whose written values are unique is a family
// of words, one per key (Cepeda, Chowdhury, Li, Lopez, Wang and Golab,
// "Toward Linearizability Testing for Multi-Word Persistent
// Synchronization Primitives", OPODIS 2019, Sections 4 and 5): get and
// read are reads, put a swap (it returns what it replaced), putifabsent
// and a register's cas a cas, a remove that took a value a swap to a
// tombstone of its own. The object, all its keys at once, is written as
// a version 1 history of words and decided by package analyzer in the
// mode asked, in near-linear time (unique.go says the translation and
// when it is exact). Where it is not, the search decides: a key seen
// without a value after a remove may have left one (nil does not say which
// remove), or holding a "?" operation the word history cannot keep open,
// goes to the search alone (ObjectResult.Engine EngineMixed); a register's
// write (no old value), process order linking the object to another, or
// the analyzer unable to decide (its Assumptions 1 and 2, its budget of
// completions) send the whole object. A violation is explained by the
// search on the failing key when that is small and quick, else from the
// analyzer's anomaly told in the map's terms (keys, values, the object's
// operations and their lines).
//
// # Engines in competition
//
// Where a fast engine applies, it and the search race (race), as Lowe's
// tester runs two algorithms: the fast engine starts first, the search
// after a head start of a few milliseconds (or at once when the fast
// engine gives up), the first answer is the object's, and the other is
// cancelled through its context and waited for. Options.Engine forces one
// engine (tests, benchmarks); ObjectResult.Engine says which answered.
//
// # Synchronisation objects
//
// An object whose model sets Model.Sync (exchanger, channel) is judged by
// synchronisation linearisation instead (Lawrence and Lowe,
// "Synchronisation: specification and testing", Sections 2.3 and 7.3-7.4):
// its stateless specification makes that a matching that covers every
// operation that returned, found by Edmonds' blossom search on a doubled
// graph that lets optional operations stay unpaired (sync.go, engine
// EngineSync), with progressibility (Section 3) as ObjectResult.Stuck.
// Recoverable process order through such an object goes to the generic
// search in two-step form instead (twostep.go, Section 4; EngineTwoStep),
// undecided where that form cannot prove a violation.
//
// A violation is explained as data (Explanation): the longest order the
// search found and the model's state after it, the operation that could
// not come next, and a set of the object's operations that no order
// explains, shrunk by removing operations and checking again until no
// single one can go.
package lin
