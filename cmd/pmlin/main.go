// Command pmlin tests persistent-memory synchronization primitives and data
// structures for linearizability; package cli is its command line, specified by
// docs/cli-contract.md. It links the targets that come with pmlin: the
// PMwCAS (package mwcas, the default), a lock-striped MwCAS with a redo
// log (package lockmwcas), level hashing, a persistent hash index of the
// map model (package internal/levelhash), and Friedman et al.'s durable
// queue (package internal/dqueue), and a sorted list built on the PMwCAS
// (package internal/pmlist).
//
// The build is profile-guided: default.pgo merges CPU profiles of three
// workloads, each run by a build without a profile: pmlin check reading a
// 10M-operation history on two cores (the compiler then inlines the hot
// calls of reading and loading: about 4 % fewer instructions for the whole
// check of a 1M-operation history, callgrind), a fuzz campaign with the
// defaults (the region accesses, the scheduler's hook and the merge
// inlined: about 5 % fewer instructions for pmlin fuzz --jobs 1 --runs 100
// --seed 7; the profile's campaign has another seed), and the recording
// benchmark (the free scheduler's workers, their records and the dumper).
// Regenerate it after large changes to those paths, as it was made:
//
//	pmlin gen --ops 10000000 --procs 8 > /tmp/big.hist
//	go build -pgo=off -o /tmp/pmlin ./cmd/pmlin
//	/tmp/pmlin check --cpuprofile /tmp/1.prof /tmp/big.hist
//	/tmp/pmlin check --cpuprofile /tmp/2.prof /tmp/big.hist
//	/tmp/pmlin fuzz --runs 4000 --seed 11 --seconds 1000 --cpuprofile /tmp/3.prof
//	/tmp/pmlin bench logging --reps 2 --duration 400ms --out /tmp/b --cpuprofile /tmp/4.prof
//	go tool pprof -proto /tmp/1.prof /tmp/2.prof /tmp/3.prof /tmp/4.prof > cmd/pmlin/default.pgo
package main

import (
	"github.com/pmlin/pmlin/cli"
	"github.com/pmlin/pmlin/internal/dqueue"
	"github.com/pmlin/pmlin/internal/levelhash"
	"github.com/pmlin/pmlin/internal/pmlist"
	"github.com/pmlin/pmlin/lockmwcas"
	"github.com/pmlin/pmlin/mwcas"
)

func main() {
	cli.Main(mwcas.Target(), lockmwcas.Target(), levelhash.Target(), dqueue.Target(), pmlist.Target())
}
