// Package target is the contract between pmlin's harness and a persistent
// primitive under test: a multi-word CAS and a multi-word read that keep
// their state in a pmem.Region, survive crashes of that region, and can be
// recovered. The harness (packages driver and crash, commands pmlin run and
// fuzz) drives any Target through this contract alone: the built-in PMwCAS
// (mwcas.Target) is one, the lock-striped MwCAS of package lockmwcas
// another, and a user's own is a third. Histories recorded from them are
// checked by the method of Cepeda et al., "Toward Linearizability Testing
// for Multi-Word Persistent Synchronization Primitives", OPODIS 2019.
//
// # What the harness does with a target
//
//  1. It asks Size for the region words a configuration needs (and to
//     check the configuration), makes a region of that many zero words (in
//     memory for emulated crashes, a file for process kills), and calls
//     New on it.
//  2. Worker goroutines 0 .. Config.Workers-1 invoke CAS and Read (and
//     the optional operations below) concurrently, one goroutine per
//     worker id at a time. Every value a CAS or a swap writes is new to
//     its word (no value is written twice), below 1<<ValueBits, and every
//     word starts at 0.
//  3. At a region access of its choosing, the harness crashes the region:
//     that access and every later one of every worker returns an error
//     wrapping pmem.ErrCrashed. The operations in progress must return
//     that error (wrapped or not); the harness waits for all of them.
//  4. It replaces the region's contents by a crash image (what survives
//     depends on the image policy, see package pmem), reopens the region
//     as a new process would (pmem.Region.Reopen for an emulated crash,
//     the region file for a process kill: nothing of the live Instance is
//     kept), calls Open on it and Recover, as worker 0, on the Instance
//     Open returns. An Open that refuses the image is a finding. Recover
//     may itself be crashed and is then called again on a new image.
//  5. It reads region word DataOffset(a) of every data word a directly,
//     and records those values as a read by a process of its own: what
//     recovery left, not what an operation of the target would make of
//     it. A target that cleans lazily (its words may still hold descriptor
//     pointers or marks after Recover) implements Decoder instead: each
//     word is read through Decode, which may only load. Then the workers
//     go on; at the end, a Read of every word.
//
// The harness, not the target, writes the history: the invocations and
// responses of the workers' operations, the "crash" line, the comments
// after it (the image policy, and Recover's note) and the reads after
// recovery. A target writes nothing.
//
// # What the harness needs of a target
//
// Every access to state shared between workers goes through the region's
// workers: the pmem.Worker of the operation's worker id (r.Worker(worker)),
// with Load, Store, CAS, Flush and Fence. The driver's deterministic
// scheduler runs one worker at a time and switches only at region
// accesses, crashes fall only at region accesses, and a run is replayed
// byte for byte from its seed only if nothing else is shared. So:
//
//   - no shared Go memory between workers (per-worker scratch space is
//     fine) but the volatile state below, and no region other than the
//     one New was given: a target
//     whose operations make no region access is refused under the
//     deterministic scheduler;
//   - no waiting in Go for another worker (sync.Mutex, channels,
//     sync.WaitGroup, sleeps): a wait is a loop of region accesses, for
//     instance a lock word taken with a region CAS; a worker that blocks
//     outside region accesses is reported as the anomaly "blocked" (the
//     free scheduler, --sched free, runs such targets, without replays);
//   - volatile state that workers share outside the region, such as an
//     epoch counter of memory reclamation kept in a Go atomic, is
//     allowed, but no scheduler sees it: mark each step on it with
//     pmem.Worker.Volatile(key) between the load and the write that
//     depends on it (key names that state), so that the deterministic
//     scheduler can run others there too (its late-write runs do, package
//     driver); what lives in Go memory does not survive a crash, and
//     Recover starts it afresh;
//   - an operation that loops must make region accesses while it loops:
//     one that makes --stuck-accesses of them without returning is
//     reported "stuck";
//   - an error from a region access must end the operation with that
//     error; an operation or a recovery that returns any other error is a
//     finding ("corrupt"), as is an Open that refuses a region;
//   - durability is the target's business: the region keeps only what
//     was flushed and fenced (Flush, Fence) under the min image policy,
//     a random prefix of each line's later stores under random, and so on
//     (package pmem); pmem.Worker.MarkLinearization, just before the step
//     that decides an operation, makes the targeted policy drop exactly
//     the stores from that step on that are not yet durable.
//
// CAS must return, when it fails, an address whose value differed from
// the expected one (the OPODIS paper's gray-box assumption), and Read one
// atomic snapshot of its words.
//
// # Optional operations
//
// An Instance may implement two more interfaces, which the harness
// detects with a type assertion: Swapper, a multi-word swap that returns
// the values it replaced (the workload then mixes swaps in, --swaps P,
// their new values unique as the CAS's are), and FailReporter, a CAS whose
// failure also reports the values it read (--fail-values; the history's
// "ret fail a v1 ... vk"). Asking for either of a target whose instance
// lacks it is an error of the run, not a finding.
//
// # Planted variants and parameters
//
// Mutants lists the target's planted bugs, if any; the harness passes the
// one chosen by --mutant in Config.Mutant to New and Open. Params are the
// target's knobs (a pool size, a layout), each a flag of pmlin run and
// fuzz of its name: Config.Params holds every one, its default unless the
// user set it, and Config.Int parses the integer ones. A parameter that
// lists values in Param.Fuzz is drawn from them, run by run, by pmlin fuzz
// in the runs whose shape it varies (unless the user set it).
//
// # Progress
//
// pmlin fuzz checks more than linearizability. With the deterministic
// scheduler it stops a worker for good right after one of its writes
// inside an operation (the progress check, --stall), and holds workers
// back before a CAS until the others have changed that word, or brought
// its expected value back (late writes, --late; a late write lands on a
// word that moved on, as a descheduled helper's does). Meanwhile the
// others must keep completing operations: an operation that makes
// --stall-accesses of its own region accesses while no operation of
// another live worker returns is reported "stuck", naming the stopped or
// held worker; every return restarts the count of the operations in
// progress. The bound is 10,000 or 16·k², whichever is larger (k is
// Config.MaxK), so a correct operation of O(k²) steps, such as a read
// that looks each of its words up in a descriptor's entries, has room;
// a retry because others keep winning is overtaken by their returns. That
// is lock-freedom: a worker that stops does not stop the others.
//
// A target whose operations wait for another worker by design (a lock)
// declares it with Target.Blocking and is never stopped or held. A
// lock-free target may still wait where its design blocks: reclamation
// waiting for memory that a stopped worker keeps (an epoch it has not
// left, a hazard slot it has not cleared). Such a wait loop calls
// pmem.Worker.Wait once per round: the Wait and the loads of its round
// (a scan of the hazard slots, a re-read of an epoch) are not counted,
// and once every live worker waits so, the stopped or held one is let
// go. A loop that only loads, never calling Wait, is counted step by
// step, as a spin that should help instead; and a Wait where the worker
// could help (finish the operation it waits for) hides exactly the bug
// the check is for. Steps on volatile state shared outside the region
// are marked with pmem.Worker.Volatile (above): late-write runs switch
// workers there.
//
// # Linking a target into pmlin
//
// cli.Main(targets...) is pmlin's command line with the given targets: a
// user's own pmlin is a main package that calls it with theirs. From a
// test, pmlintest.Fuzz runs a campaign on one target and fails the test
// with the files it kept. docs/your-primitive.md goes from an empty
// package to a caught bug.
package target
