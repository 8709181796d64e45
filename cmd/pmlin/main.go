// Command pmlin tests persistent-memory synchronization primitives for
// linearizability; package cli is its command line, specified by
// docs/cli-contract.md. It links the targets that come with pmlin: the
// PMwCAS (package mwcas, the default) and a lock-striped MwCAS with a redo
// log (package lockmwcas).
package main

import (
	"github.com/pmlin/pmlin/cli"
	"github.com/pmlin/pmlin/lockmwcas"
	"github.com/pmlin/pmlin/mwcas"
)

func main() { cli.Main(mwcas.Target(), lockmwcas.Target()) }
