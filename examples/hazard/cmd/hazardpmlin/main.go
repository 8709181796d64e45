// Command hazardpmlin is pmlin with the hazard target linked in.
package main

import (
	"github.com/pmlin/pmlin/cli"
	"github.com/pmlin/pmlin/examples/hazard"
)

func main() { cli.Main(hazard.Target()) }
