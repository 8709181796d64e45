// Package pmem is pmlin's persistent region: an array of 64-bit words, backed
// by a mapped file or by anonymous memory, with the operations that lock-free
// persistent-memory code is written against: atomic Load, Store and CAS per
// word, Flush (CLWB) of a 64-byte line, and Fence (SFENCE).
//
// It models the NVM setting of Wang, Levandoski and Larson, "Easy Lock-Free
// Indexing in Non-Volatile Memory", ICDE 2018 (section "Background", the
// NVM programming model: caches are volatile, CLWB writes a line back, a fence
// orders the write-backs, and 8-byte aligned stores are failure-atomic), and
// it is the substrate on which internal/mwcas implements that paper's PMwCAS.
//
// # Addressing
//
// A region holds Words() words; a word is named by its offset counted in words
// (0 .. Words()-1), never by a pointer, so a region survives being closed and
// mapped again, and a crash image is just another region. Line i holds words
// 8i .. 8i+7.
//
// # Workers
//
// Every access is made through a *Worker obtained with Region.Worker(id). The
// id identifies the thread of the caller to the access hook (see AccessHook)
// and owns the set of lines the worker has flushed and not yet fenced. A Worker
// must be used by one goroutine at a time.
//
// # Emulated persistence
//
// With Options.Emulate, the region keeps, beside what threads see, what is
// durable. For each line it logs the stores in coherence order (stores and
// successful CAS on a line are serialized by a per-line lock, or by an
// ExclusiveHook that runs one worker at a time, so the log order is the order
// in which the values became visible) and a durable mark. Flush
// records the line's current log position for the calling worker; Fence makes
// the worker's recorded positions durable. A crash image keeps, per line, a
// prefix of the log between the durable mark and its end, chosen by a Policy:
//
//	min       every store not yet made durable is lost
//	max       nothing is lost (a process crash: the page cache survives)
//	random    a random prefix per line, from the caller's seeded generator
//	targeted  drops exactly the stores made since the last
//	          Worker.MarkLinearization and not yet made durable
//
// Per-line prefixes are what x86 guarantees: stores to one line reach memory
// in order, stores to different lines in any order.
//
// # Crashes
//
// A crash is requested with Region.RequestCrash, or by an AccessHook that
// returns an error wrapping ErrCrashed. From then on every access of every
// worker returns ErrCrashed without touching memory, so each operation in
// progress unwinds at its next access. When the caller has seen all its
// workers stop, Region.Crash(policy, rng) replaces the region's contents by a
// crash image in place (a file-backed region writes the image to its file),
// and the region is ready for recovery. Region.CrashImage builds the image as
// a new anonymous region instead and leaves the original alone.
//
// # Restarts
//
// Recovering through the Region object that crashed skips what a new process
// does: map the file again, check its header, start with no worker, no
// pending flush and no volatile state. Region.Reopen does it (Close and Open
// for a file-backed region; Image and OpenImage, the same checks on bytes,
// for an anonymous one), so recovery code can be tested as it runs after a
// real restart. Region.Image also keeps a crash image as a file. Region.Renew
// makes a fresh zeroed region of an anonymous one's memory, for a harness
// that makes one region per run.
//
// # Files
//
// A region file starts with a 4096-byte header: magic, format version, word
// count, line and word size, and a CRC-32C of those fields. The data follow.
// The checksum covers only the header, which is written once when the file is
// created, so a file whose writer was killed in the middle of its work opens
// again; a foreign, damaged, truncated or oversized file is refused with an
// error that says which, and is never reinitialised. One process owns a region
// file at a time (flock); the lock dies with the process.
package pmem
