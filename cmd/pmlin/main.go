// Command pmlin tests persistent-memory synchronization primitives for
// linearizability; package cli is its command line, specified by
// docs/cli-contract.md.
package main

import "github.com/pmlin/pmlin/cli"

func main() { cli.Main() }
