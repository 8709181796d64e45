// Command shadowpmlin is pmlin with the shadow target linked in.
package main

import (
	"github.com/pmlin/pmlin/cli"
	"github.com/pmlin/pmlin/examples/shadow"
)

func main() { cli.Main(shadow.Target()) }
