// Package record is the recording half of the driver (package driver):
// each worker's private log of its operations, the records it holds, the
// clocks that stamp them, and the merge of the logs into a history
// (docs/history-format.md), text or binary.
//
// Each worker logs the invocation of an operation before its first region
// access and the response after its last one, each with a timestamp, in a
// private log (Log): no lock, no shared counter, no shared cache line. A
// shared log would order the workers and mask the bugs it is meant to find
// (Lowe, "Testing for linearizability", 2017). The logs are merged by
// timestamp, invocations before responses on ties so that a recorded
// interval never shrinks (the tie rule of recorders/README.md, stated in
// package internal/tie), and streamed to a history writer (Recorder):
// under the free scheduler by a goroutine (the dumper) while the workers
// run, as far as the chunks they have handed over allow, the rest at the
// end of each segment (a stretch of the workload between crashes); a
// binary history takes the logs as they are, unmerged (its reader merges
// them by the same rule). The logs are flat arrays of 64-bit words, whose
// records are the binary format's stream records (internal/wire) and two
// of their own for a data structure's operations; a log may live in a
// shared file mapping (LayoutSharedLogs), which is how a child process
// killed with SIGKILL hands its history to its parent (package crash).
//
// The timestamps (Clock, ClockSource) come from the TSC where the kernel's
// clocksource is the TSC, else from the monotonic clock; a lone worker
// counts its steps; the deterministic scheduler's logical clock is the
// driver's own. These are the histories of the OPODIS paper's analysis
// (Cepeda et al., "Toward Linearizability Testing for Multi-Word
// Persistent Synchronization Primitives", OPODIS 2019, Section 4).
package record
