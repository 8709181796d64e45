// Package cli is the pmlin command line: it checks recorded histories
// (pmlin check) by the precedence-multigraph method of Cepeda et al.
// (OPODIS 2019), records histories from the built-in PMwCAS while crashing
// it (pmlin run, and the main job, pmlin fuzz), lists the planted bugs
// (pmlin mutants), writes large synthetic histories (pmlin gen) and runs
// the benchmark suites (pmlin bench). Its command line is specified by
// docs/cli-contract.md.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/spf13/cobra"
)

// Exit statuses of docs/cli-contract.md.
const (
	exitOK       = 0
	exitViolated = 1
	exitInput    = 2
)

// exitError carries an exit status out of a command.
type exitError struct {
	code int
	err  error // nil: nothing more to print
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

// env is what a command may touch: no globals, so tests run commands in
// process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// stderrTTY: stderr is a terminal, so progress bars are welcome.
	stderrTTY bool
}

// Main runs the command line on the process's arguments and exits.
func Main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, stderrTTY: isTerminal(os.Stderr)})
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, e env) int {
	root := &cobra.Command{
		Use:   "pmlin",
		Short: "Linearizability testing for persistent multi-word synchronization primitives",
		Long: `pmlin tells, with evidence, whether a multi-word CAS primitive is linearizable
under concurrency and still correct after crashes. It checks histories by the
precedence-multigraph method of Cepeda et al., OPODIS 2019.

The history format and this command line (every flag, exit status and JSON
field) are documented in docs/history-format.md and docs/cli-contract.md of
the pmlin repository.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetArgs(args)
	root.AddCommand(checkCommand(e))
	root.AddCommand(runCommand(e))
	root.AddCommand(fuzzCommand(e))
	root.AddCommand(mutantsCommand(e))
	root.AddCommand(internalWorkerCommand(e))
	root.AddCommand(genCommand(e))
	root.AddCommand(benchCommand(e))
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(e.stderr, "pmlin:", ee.err)
		}
		return ee.code
	}
	// Anything else is a usage error from cobra (unknown flag, bad args).
	fmt.Fprintln(e.stderr, "pmlin:", err)
	return exitInput
}
