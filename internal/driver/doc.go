// Package driver runs workloads of multi-word reads and multi-word CAS
// operations against the operations of a target (package target: a
// persistent primitive on a pmem.Region, such as the PMwCAS of package
// mwcas) and records what they did as a history
// (docs/history-format.md): the input of the linearizability analysis of
// Cepeda, Chowdhury, Li, Lopez, Wang and Golab, "Toward Linearizability
// Testing for Multi-Word Persistent Synchronization Primitives", OPODIS 2019
// ("the OPODIS paper").
//
// # Workloads and the paper's assumptions
//
// A workload is a number of threads (processes), operations, words (the
// address space) and k, the words per operation (distinct, in random
// order), with a mix of reads and CAS, and, for a target that has them
// (target.Swapper, target.FailReporter), multi-word swaps (Config.Swaps)
// and failed CAS that report the values they read (Config.FailValues). It
// keeps the two assumptions of the OPODIS paper's Section 4 by
// construction:
//
//  1. every new value (of a CAS or a swap) is a unique tag, (process id +
//  1. << 32 | counter, below 1<<target.ValueBits (a target may keep
//     flags above), so no value is written twice to a word and none
//     equals the initial value 0;
//  2. every CAS expects, at each of its words, the value its own process
//     returned from an earlier, finished read of that word (a fresh read:
//     a read-modify-write; or an older one: a CAS that will likely fail),
//     or that an earlier failure of its own reported there (a retry). A
//     swap expects nothing.
//
// # Data structures
//
// A data-structure target (target.Target.Model: a queue, a map, ...) is
// driven by NewObject instead: its workload draws the operations of its
// version 2 model (workload_model.go: weights per operation, elements and
// values unique tags as above, keys 0 .. Keys-1), the workers log them as
// records of their own in the same flat logs (record.Log.InvokeOp),
// and the merge writes version 2 text lines (docs/history-format.md,
// "Version 2"), with RecordState recording the state a recovery
// left as operations that read it (a queue's contents, a map's get of
// every key). Everything else (schedulers, crash points, stalls, late
// writes, shared logs) is the same.
//
// # Logging
//
// Each worker logs the invocation of an operation before its first region
// access and the response after its last one, each with a timestamp, in a
// private log, and the logs are merged into the history: package
// internal/record (the logs, their records, the clocks, the merge, the
// dumper, the shared logs of the process-kill modes). The driver decides
// when a worker logs and with which stamp; record decides how.
//
// # Schedulers
//
// Free: the workers are goroutines that run as the Go runtime and the
// machine let them; optional seeded random yields (runtime.Gosched) at
// region accesses widen the interleavings. Timestamps come from the TSC
// where the kernel's clocksource is the TSC, else from the monotonic clock;
// a lone worker counts its steps (record.ClockSource says why each
// orders the steps).
//
// Deterministic: one worker runs at a time. At every region access (the
// pmem.AccessHook) and at every operation boundary a seeded choice picks
// who runs next, so the same configuration and seed give the same history
// byte for byte and every violation replays. Timestamps are a logical
// clock. Each worker runs in a coroutine of its own (iter.Pull), and the
// turn passes from one to the next by a coroutine switch, not through the
// Go scheduler; a driver that keeps its workers (KeepWorkers: the crash
// harness's) parks them, idle, from one segment to the next, and hands
// them on to the next driver (Recycle) until Close. A "stick" probability keeps the running worker running, which
// makes the long solo runs some interleavings need likely; by default the
// seed chooses one of three styles (0, 0.8, 0.95).
//
// The deterministic scheduler can switch workers only at region accesses.
// A target whose operations make none is refused (they would run whole,
// one after another), and one that waits outside region accesses, on a Go
// mutex or a channel, for another worker that never gets the turn is
// caught by a watchdog: the turn did not change hands and no operation was
// invoked for StuckAfter.
// The driver then reports the worker as Blocked (with the advice to wait
// by region accesses instead, or to use the free scheduler), abandons its
// goroutine, and refuses further segments, instead of every goroutine
// sleeping forever (which Go ends with "all goroutines are asleep").
//
// Late writes (Config.Late, late.go): in the spirit of PCT (Burckhardt et
// al., ASPLOS 2010), the deterministic scheduler may hold a worker before
// a CAS until the others have changed that word's value a seeded number of
// times, or until the word holds the value the CAS expects again after
// another (an ABA: told by pmem.CASHook, the held worker then runs next so
// its CAS lands), so that the CAS acts on what the worker read long
// before: the windows of late helpers and slow advancers that uniform
// choices almost never open. A worker may then be held for good right
// after its late CAS while the others in an operation run alone one at a
// time (obstruction-freedom). In those runs a target's steps on shared state outside the
// region, which it marks with pmem.Worker.Volatile, are switching points
// too (other runs ignore them, and keep the histories they had). Its
// draws come from a stream of their own.
//
// Late crashes (CrashPoint.Late, latecrash.go): with late writes on, a
// segment may crash not at a given access but where persistence bugs
// hide: after a late CAS landed and another write changed that word, right
// before the first fence that would make the change durable (the driver
// follows the flushes and fences of the word's cache line), with the
// change and nothing else lost in the image (pmem.Region.CrashKeeping,
// SegmentResult.LateCrash). It draws nothing, so a segment replays.
//
// # Progress
//
// Lawrence and Lowe's progressibility: an operation that has not returned
// after a bound of its own region accesses, while the scheduler kept running
// it (deterministic), or after that many accesses and a wall-clock bound
// (free), is stuck: the driver stops the segment and reports it with the
// line of its invocation, for instance a spin on a word that a broken
// recovery left in a state no operation can finish.
package driver
