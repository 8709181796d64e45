// Package pmlin checks from Go, in the manner of Porcupine's
// CheckOperations, whether a history of multi-word reads, multi-word
// compare-and-swaps and multi-word swaps, recorded with timestamps and
// possibly cut by
// full-system crashes, is linearizable: by the precedence-multigraph method
// of Cepeda et al., "Toward Linearizability Testing for Multi-Word
// Persistent Synchronization Primitives" (OPODIS 2019), Sections 4 and 5
// (package analyzer), in strict, recoverable or durable mode.
//
// Operations go in with the caller's process ids, arguments, responses and
// call and return timestamps; the result names the caller's operations by
// their index in History.Operations:
//
//	res, err := pmlin.Check(ctx, pmlin.History{Operations: ops}, pmlin.Options{})
//	if err != nil { ... }       // the history cannot be judged: *pmlin.Error names the operation
//	if !res.Linearizable { ... } // res.Anomalies[i].Ops are indexes in ops
//
// Package pmlintest wraps Check for tests: on failure it keeps the history
// and an HTML report as test artifacts.
//
// # Objects of any data type
//
// A History with Objects is a history of objects of any sequential data
// type (docs/history-format.md, "Version 2"): each object has a name, a
// model (a queue, a map, a register, ...: package model's built-in ones,
// or one of the caller's own, found by Options.Models) and its
// parameters; each operation names its object (an index in Objects), its
// operation, its arguments and, when it returned, its results, or ends
// Unknown (answered, outcome not known: Jepsen's :info) or Pending (cut
// off). Timestamps, ties and crashes are as below. The exact checker for
// any model (Lowe's just-in-time linearisation with memoisation, per
// object and per partition, internal/lin) decides it in the three modes;
// Result.Witness and each Anomaly (kind "nonlinearizable", one per object
// no order explains) name a minimal set of the caller's operations, and
// WriteHistory writes the history as checked in version 2 text.
//
//	h := pmlin.History{
//		Objects:    []model.Object{{Name: "q", Model: "queue"}},
//		Operations: ops, // Object 0, Name "enq"/"deq", Args, Results, Call, Return, Outcome
//		Crashes:    crashes,
//	}
//	res, err := pmlin.Check(ctx, h, pmlin.Options{Mode: pmlin.Durable})
//
// # Timestamps, ties and crashes
//
// Timestamps are int64s of one clock shared by every process, in any unit;
// only their order matters. The history is the steps (invocations,
// responses, crashes) merged by timestamp, by the rule of pmlin merge and
// of the recorders: each process's own operations in the
// order of their calls, a response before its process's next invocation;
// between processes the earlier timestamp first and, on equal timestamps,
// invocations before responses. So, as in Porcupine, an interval is
// closed: an operation that returns at 20 and one of another process
// called at 20 overlap, and either may be linearized first; the merge never
// invents an order the timestamps do not show. Where it cannot help
// inventing one, Check refuses the history (an *Error whose Err is
// history.ErrCoarseClock): two processes that each return and call their
// next operation at one timestamp, so that either could have gone first
// (recorders/README.md, rule 4, has the rule). A process's operations must
// not overlap: each is called at or after its previous one returned, or,
// if that one is Pending, after a crash.
//
// A crash (History.Crashes: its timestamp) interrupts every operation
// called before it and not yet returned: such an operation must be
// Pending, and its process may call new operations after the crash. A
// crash may not share its timestamp with a step (which side of the crash
// the step is on would be a guess). An operation Pending with no crash
// after its call is cut off by the end of the history. Cut-off operations
// are judged by the completion rules of package analyzer (Options.Mode).
//
// # Operations named by index
//
// Check reads the caller's operations as events, in memory: it writes no
// text and parses none. Everything it says names them as the caller does:
// Anomaly.Ops, Edge.From and To, Result.Witness and Error.Op by index in
// History.Operations, and the sentences (Anomaly.Explanation, Edge.Reason,
// Result.Hint, Error, Result.WriteReport) "operation 3", "crash 1" (an
// index in History.Crashes) and a response by its timestamp ("returned at
// time 20"); Result.Hint blames the Call and Return timestamps, not a
// file's line order or pmlin merge. The text is written only when asked for: History.WriteTo and
// Result.WriteHistory write the history in the format of
// docs/history-format.md, each invocation line ending with "# op I" and
// each crash line with "# crash K", and Result.Line gives an operation's
// line there, which the HTML report's timelines name. A history of
// objects (History.Objects) is spoken of the same way: the explanations,
// stuck operations, undecided reasons and errors of the exact checker for
// any model name "operation 3" and "crash 1".
package pmlin
