// Package mwcas is the persistent multi-word compare-and-swap that comes
// with pmlin (PMwCAS, after Wang, Levandoski and Larson, "Easy Lock-Free
// Indexing in Non-Volatile Memory", ICDE 2018) as a target of pmlin's
// harness: pmlin's built-in "pmwcas", with the bugs a linearizability
// checker should find planted as mutants (pmlin mutants --target pmwcas).
// cmd/pmlin links it; a pmlin of one's own may link it beside its own
// targets:
//
//	func main() { cli.Main(mwcas.Target(), mytarget.Target()) }
package mwcas

import (
	impl "github.com/pmlin/pmlin/internal/mwcas"
	"github.com/pmlin/pmlin/target"
)

// Target is the PMwCAS as a target: its planted bugs, and three
// parameters, --descriptors (each worker's share of the descriptor pool)
// and the data layout's --stride and --line-offset, which pmlin fuzz varies
// run by run. It is lock-free: its one wait by design, for a descriptor
// that epoch-based reclamation holds back, is declared (pmem.Worker.Wait).
func Target() *target.Target { return impl.Target() }
