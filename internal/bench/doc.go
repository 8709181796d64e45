// Package bench holds pmlin's benchmark suites (`pmlin bench SUITE`): each
// measures something the OPODIS paper (Cepeda, Chowdhury, Li, Lopez, Wang,
// Golab, "Toward Linearizability Testing for Multi-Word Persistent
// Synchronization Primitives", OPODIS 2019) or the PMwCAS paper (Wang,
// Levandoski, Larson, ICDE 2018) claims, prints a table, writes the points
// as CSV, draws them as PNG plots (gonum.org/v1/plot) and a Markdown
// section, and returns a report that marshals to JSON.
//
// The suites:
//
//   - scale reproduces the OPODIS paper's Figure 8: the analyzer's running
//     time and the precedence graph's edge count against the size of the
//     log, on prefixes of one large log recorded by the driver (or
//     generated), with a least-squares line: the analysis is linear in the
//     size of the log.
//   - reducehb reproduces Figure 9: the happens-before relation with and
//     without ReduceHB (Figure 3 of the paper) on prefixes up to 1 MB and
//     more. The analyzer cannot run without ReduceHB (its graph stores
//     happens-before as ranges), so the suite times both sides the same
//     way: stream the prefix and compute each operation's response rank
//     (the same parse for both), then build the edges (reduce.Ranges
//     against reduce.AllPairs, every happens-before pair materialised) and
//     run a cycle check (an iterative DFS) over them. The paper reports a
//     100x speedup at 1 MB. The whole analyzer's time on each prefix is
//     reported beside.
//   - logging measures the cost of recording, which the OPODIS paper puts
//     at about 10 %: the driver's PMwCAS workload with and without its
//     per-thread logs, their merge and the writing of the history; with
//     Options.Split also with the history dropped instead of written, so
//     that the cost splits between the process and the disk.
//   - porcupine puts pmlin beside Porcupine (github.com/anishathalye/porcupine,
//     a Wing–Gong/Lowe checker with P-compositionality) on the same
//     histories, across 4, 8, 16 and 32 processes and growing length: time
//     and peak memory, each run in a child process with a time and a memory
//     limit, so that timeouts and out-of-memory are shown as such.
//   - mwcas measures the PMwCAS itself (the ICDE paper's throughput
//     figures): operations per second against threads and k, with the
//     persistence emulation on and off, beside a mutex-protected baseline.
//   - fuzz measures pmlin fuzz campaigns, each in a child process: crash
//     cycles per second and per CPU-second with the true defaults, and CPU
//     time per run at one job, beside an older pmlin binary
//     (Options.Baseline) on the same campaigns, interleaved. It is not
//     part of all.
//
// Measurements of the checkers run in child processes (Options.Child: the
// pmlin binary's hidden `pmlin bench child` subcommand, see ChildMain), which
// report their own timings and peak resident memory (VmHWM; the kernel's
// rusage of a child started by vfork and exec carries the parent's
// high-water mark, so it is not used), while the parent samples their
// resident memory: a child that exceeds its time or memory limit is killed
// and its point is marked "timeout" or "oom".
package bench
