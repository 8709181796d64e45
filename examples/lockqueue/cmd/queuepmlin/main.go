// Command queuepmlin is pmlin with the lockqueue target linked in.
package main

import (
	"github.com/pmlin/pmlin/cli"
	"github.com/pmlin/pmlin/examples/lockqueue"
)

func main() { cli.Main(lockqueue.Target()) }
