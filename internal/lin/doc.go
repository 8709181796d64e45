// Package lin decides linearizability of a version 2 history
// (docs/history-format.md) for objects of any model (package model),
// exactly, in each of the three crash modes.
//
// # What it decides
//
// A history is linearizable when each object's operations are (locality,
// Herlihy and Wing): some sequence of them holds every operation that
// returned, at most once each optional one (cut off by a crash or the
// end, or answered "?"), respects real time and each optional
// operation's window (window, the one statement of the rule), and replays
// on the model from one of its initial states with every result as
// recorded. Each window is an interval of positions, so an object whose
// model partitions its operations (a map by key, a set by value, words by
// connected components of addresses) is checked partition by partition:
// Horn and Kroening's P-compositionality ("Faster linearizability
// checking via P-compositionality", FORTE 2015, Section 3).
//
// # How
//
// Each object, or each partition, is one search: Lowe's just-in-time
// linearisation ("Testing for linearizability", Concurrency and
// Computation 2017, Section 3, the refinement of Wing and Gong's search
// that Porcupine also implements), with a memo of configurations
// (the set of operations done, the model's state as Model.Key says it).
// An optional operation has one alternative more than taking effect with
// any result the model allows: being left out. The searches run on
// GOMAXPROCS goroutines. Each has a budget of states; all of them
// together a bound on the memory their memos hold: beyond either, the
// answer is Undecided with the reason, never a guess.
//
// A violation is explained as data (Explanation): the longest order the
// search found and the model's state after it, the operation that could
// not come next, and a set of the object's operations that no order
// explains, shrunk by removing operations and checking again until no
// single one can go.
package lin
