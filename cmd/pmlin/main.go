// Command pmlin tests persistent-memory synchronization primitives for
// linearizability; package cli is its command line, specified by
// docs/cli-contract.md. It links the targets that come with pmlin: the
// PMwCAS (package mwcas, the default) and a lock-striped MwCAS with a redo
// log (package lockmwcas).
//
// The build is profile-guided: default.pgo merges CPU profiles of two
// workloads, each built without a profile: pmlin check reading a
// 10M-operation history on two cores (branch s21-analysis: the compiler
// then inlines the hot calls of reading and loading, 4 % fewer
// instructions for the whole check of a 1M-operation history), and a
// fuzz campaign with the defaults (the region accesses, the scheduler's
// hook and the merge inlined: 5 % fewer instructions for pmlin fuzz --jobs
// 1 --runs 100 --seed 7, callgrind; the profile's campaign has another
// seed). Regenerate it after large changes to those paths, as it was made:
//
//	pmlin gen --ops 10000000 --procs 8 > /tmp/big.hist
//	go build -pgo=off -o /tmp/pmlin ./cmd/pmlin
//	/tmp/pmlin check --cpuprofile /tmp/1.prof /tmp/big.hist
//	/tmp/pmlin check --cpuprofile /tmp/2.prof /tmp/big.hist
//	/tmp/pmlin fuzz --runs 3000 --seed 11 --seconds 1000 --cpuprofile /tmp/3.prof
//	go tool pprof -proto /tmp/1.prof /tmp/2.prof /tmp/3.prof > cmd/pmlin/default.pgo
package main

import (
	"github.com/pmlin/pmlin/cli"
	"github.com/pmlin/pmlin/lockmwcas"
	"github.com/pmlin/pmlin/mwcas"
)

func main() { cli.Main(mwcas.Target(), lockmwcas.Target()) }
