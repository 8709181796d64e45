// Command pmlin tests persistent-memory synchronization primitives for
// linearizability; package cli is its command line, specified by
// docs/cli-contract.md. It links the targets that come with pmlin: the
// PMwCAS (package mwcas, the default) and a lock-striped MwCAS with a redo
// log (package lockmwcas).
//
// The build is profile-guided: default.pgo is a CPU profile of pmlin
// check reading a 10M-operation history on two cores (the compiler then
// inlines the hot calls of reading and loading, about 5 % fewer
// instructions for the whole check). Regenerate it after large changes
// to those paths:
//
//	pmlin gen --ops 10000000 --procs 8 > /tmp/big.hist
//	pmlin check --cpuprofile cmd/pmlin/default.pgo /tmp/big.hist
package main

import (
	"github.com/pmlin/pmlin/cli"
	"github.com/pmlin/pmlin/lockmwcas"
	"github.com/pmlin/pmlin/mwcas"
)

func main() { cli.Main(mwcas.Target(), lockmwcas.Target()) }
