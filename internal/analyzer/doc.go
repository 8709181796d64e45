// Package analyzer decides whether a history of multi-word reads,
// multi-word CAS and multi-word swap operations is linearizable, by the
// precedence-multigraph method of Cepeda, Chowdhury, Li, Lopez, Wang and
// Golab, "Toward Linearizability Testing for Multi-Word Persistent
// Synchronization Primitives" (OPODIS 2019), Sections 4 and 5.
//
// The history is streamed once (package history) into flat arrays: one
// vertex per operation plus a genesis vertex for the initial state. Edges:
//
//   - happens-before, reduced by ReduceHB (package reduce, Section 5.1): a
//     contiguous range of operation ids per vertex;
//   - reads-from: the writer of a value -> each operation that read it,
//     that expected it in a successful CAS, that replaced it in a swap, or
//     that reported it in a failed CAS, per word (Section 4);
//   - auxiliary (Section 5.2): a read (or a failed CAS that reports values)
//     -> the successor of its writer on that word's reads-from path; the
//     successor of the writer of a failed CAS's expected value -> the failed
//     CAS, at the word it blamed.
//
// A swap is a successful CAS whose expected values are learnt at its
// response (Section 5.1): it writes, and it is on each of its words' paths.
// A failed CAS that reports the values it read is a read at every word
// (Section 5.2), which is all its failure needs: the value it read at the
// word it blamed differs from its expected one (one that reports its own
// expected value there contradicts itself, an unexplained failure), so it
// has no auxiliary edge of a failure and Assumption 2 does not matter for
// it.
//
// The history is linearizable iff (Theorem 2 of the paper, under its
// Assumptions 1 and 2): (ii) every read, successful CAS, swap and failed
// CAS that reports values has one reads-from in-edge per word and every
// other failed CAS one auxiliary in-edge; (iii) per word, the successful
// CAS and swaps form one reads-from path from genesis; (i) the graph is
// acyclic. (ii) and (iii) are checked first, then the
// auxiliary edges are built from the paths, then (i) by an iterative DFS.
//
// # Completion rules (Section 5.3)
//
// An operation cut off by a crash (or by the end of the history) has no
// response. The history judged is transformed first, by three rules stated
// here once:
//
//  1. A cut-off read leaves the history: nobody knows what it returned.
//  2. A cut-off CAS or swap whose new values nobody observed leaves the
//     history, whether or not it took effect; unless a failed CAS can only
//     be explained by it having taken effect: then the analyzer searches
//     the few such completions (a case the paper leaves open; without it
//     the method raises false alarms), and a completion it tries stays.
//  3. A cut-off CAS or swap whose new value some operation in the history
//     observed took effect, and is completed as a success. What a cut-off
//     swap replaced is unknown: on each word it is placed after the last
//     write of the word's chain from genesis, and where several cut-off
//     swaps share a word the analyzer searches the orders they may have
//     taken effect in (searcher documents why the search is exhaustive;
//     past its budget the verdict is "undecided", an error, never a
//     guess). Its response goes, by the mode (history.Mode):
//     - strict: just before the crash that cut it off (a happens-before
//     range like any response);
//     - recoverable: at the end, plus a recovery edge to its process's next
//     operation that stays in the history after rules 1 and 2: when the
//     next operation it invoked was itself cut off and left, the edge
//     passes to the one after it, and so on (process 1's cas A is cut off
//     by crash X; its read R is cut off by crash Y and leaves; its read S
//     after Y sees A's old value: the edge A -> S makes a cycle with S's
//     auxiliary edge S -> A). Which operations stay depends on the
//     completions the search tries, so the target is recomputed for each
//     (recoveryTarget);
//     - durable: at the end, nothing more.
//
// An operation cut off by the end of the history (no crash after it) is
// completed under rule 3 with its response at the end in every mode.
//
// Assumptions (Section 4) are checked, not trusted: a value written twice to
// a word (Assumption 1) is an input error; a failed CAS whose expected value
// at the blamed word was never read before its invocation (Assumption 2)
// loses its auxiliary constraint, and if the rest of the history is
// consistent the analyzer reports that it cannot decide (an input error
// naming the line) rather than guess.
//
// Cost: one pass over the file, then a constant number of passes over
// arrays of O(n·k) int32s; no per-edge allocation and no maps in the hot
// loops. Explanations run on the same arrays (Tarjan's algorithm, then a
// breadth-first search for a shortest cycle), and report's DOT and HTML
// draw the small graphs Neighbourhood returns; the whole graph is never
// exported (the tests copy it into gonum to check the cycles against
// gonum's Tarjan).
//
// # Explanations
//
// A violation is explained data first (Elle's split of explanation data
// and rendering): edgeFacts yields, for a pair of vertices, each edge the
// graph has between them as a fact (kind, rule, the access it is about,
// the crash that cut its source off); the anomalies keep internal ids
// (findings) until the result is built, when each fact becomes an Edge
// (lines, address, value, the lines that justify it) and one renderer
// (render.go) makes its sentence. Neighbourhoods and sub-histories read
// the findings, never lines. Beside the edges, each anomaly gets its
// evidence (evidence.go): the crash story (the crashes that cut its
// operations off or fall between them, how a cut-off cas was completed and
// under which rule, what the first read after a crash found, which write
// it shows lost), where a value nobody wrote at an address was written,
// whether a failed cas's expected value was still there after it returned.
// Anomalies are listed by their earliest operation, and grouped by root
// (roots.go): one that involves an operation an earlier one holds at fault
// names that one's root (Anomaly.Root), so that a lost write's cascade of
// forks and unreachable writes is read as the one fault it is.
//
// The package holds the verdict and its witnesses. Shrinking a failing
// history is package shrink's, on top of this one and of the exact
// checker: what it needs of the graph, the operations a sub-history
// showing one anomaly needs, is Analysis.SubHistory.
package analyzer
