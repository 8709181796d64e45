// Package crash injects crashes into runs of a target (a persistent
// primitive on a pmem.Region, package target: the PMwCAS of package mwcas,
// the lock-striped MwCAS of package lockmwcas, or a user's own) driven by
// package driver, recovers, and goes on: the crash rounds that produce the
// histories with "crash" lines that the OPODIS paper's Section 5.3
// (crashed operations; strict, recoverable and durable linearizability) is
// about. Cepeda, Chowdhury, Li, Lopez, Wang and Golab, "Toward
// Linearizability Testing for Multi-Word Persistent Synchronization
// Primitives", OPODIS 2019. Every target goes through the same code: this
// package knows them only by the contract of package target.
//
// # Crash rounds (emulated)
//
// A run splits its operations into Crashes+1 segments. Each segment but the
// last crashes the region at a seeded random region access (or, for
// systematic sweeps, at a given access: see Config.CrashAt and
// FuzzConfig.Systematic): every worker unwinds at its next access, the
// history gets a "crash" line, the crash image is built by the chosen
// policy (min, max, random or targeted, see package pmem; one is drawn per
// crash from Config.Policies), the region is reopened from the image and
// the target opened on it as a new process would (an image its Open
// refuses is a finding), the target's recovery runs (itself crashed at a
// random one of the accesses a recovery makes, with probability
// Config.RecoveryCrash, up to Config.RecoveryCrashes times, or right
// after each of its flushes and fences in turn, Config.RecoverySweep, and
// run again), and a read of every word, made
// directly on the region where the target says its data words are so that
// it shows exactly what recovery left, is recorded as an operation of a
// process of its own (Threads). The workload then goes on with the same
// process ids. A run ends with a read of every word through the target.
//
// A data-structure target (target.Target.Model) goes through the same
// rounds (object.go): NewObject and OpenObject instead of New and Open,
// the model's workload (driver.NewObject), and instead of the read of
// every word the object's State after each recovery and at the end
// (checked to change no region word), recorded as operations of the
// reader process; its version 2 history is decided by the exact checker
// (internal/lin) in the run's mode (decideV2), each violation an anomaly
// "nonlinearizable" explained in the model's terms.
//
// # Process kill
//
// With Config.CrashMode Kill or KillAsync, each segment runs in a child process on a MAP_SHARED
// region file; the child logs into a shared file mapping, and the parent
// kills it with SIGKILL at a seeded random point of its progress (a real
// process crash: the page cache survives, as under the max policy),
// opens and recovers the target on the file as the next process would,
// records the full read and starts the next child; the run ends with a
// read of every word through the target the last child left, opened and
// recovered the same way. The child is the same program as the parent
// (ChildOptions.Command), so it has the same targets and finds the run's
// by name (ChildMain). The moment of the kill depends on timing, so such
// runs do not replay byte for byte; their histories are kept.
//
// Both modes share one round loop (Run): the emulated and the
// child-process modes differ only in how a segment runs, what a crash is,
// and how the target is recovered and read.
//
// # Configuration
//
// A Config's fields are literal (0 crashes is none); DefaultConfig is the
// default run. RegisterFlags binds every field to its flag of pmlin run and
// fuzz, and Args renders a configuration back as those flags: the replay
// command of a finding and the history's second line.
//
// # Checking
//
// Check records a run into memory and decides it with package analyzer;
// Fuzz does so over fresh seeds until a time budget is spent or a violation
// is found; FuzzConfig.Mix varies the runs from their seeds (Mix: their
// shapes and the target's layout, a thread stopped for good in each
// segment by the progress check, writes held back by the late-write policy
// (driver.Config.Late; a draw of its own, so that it shifts no other
// draw), in those late runs (Mix.LateCrash) a crash
// of each segment where a late write's change is not yet durable instead
// of at a random access (Config.LateCrash, driver.CrashPoint.Late: right
// before the fence that would make it durable, the image keeping every
// store but the change and what followed it on that cache line; a draw of
// its own again), in other runs (Mix.Rare) crashes also at the flushes and
// fences of paths the run had not taken before (Config.RareCrash,
// driver.CrashPoint.Rare), a data structure's keys filling it (Mix.Fill),
// recoveries under fire, and in one run in MixEvery the
// optional operations the target has, ProbeOptional), as pmlin fuzz does
// unless told the workload's. Target code runs guarded (guard.go): a panic
// is a finding, and a call that loops or waits outside region accesses is
// stopped by wall time. Besides the analyzer's anomalies a run reports
// three of its own: "stuck" (an operation that made no progress while it
// could run, or that waited for a thread the progress check stopped or
// the late-write policy held: Lawrence and Lowe's progressibility),
// "corrupt" (an operation or a recovery failed on a region state the
// correct code never produces) and "blocked" (under the deterministic
// scheduler, the target waited outside region accesses, see
// driver.Blocked).
package crash
