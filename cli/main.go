// Package cli is the pmlin command line: it checks recorded histories
// (pmlin check) by the precedence-multigraph method of Cepeda et al.
// (OPODIS 2019), and histories of objects of any data type (format version
// 2) by the exact search for any model (internal/lin), records histories from persistent primitives (targets,
// package target) while crashing them (pmlin run, and the main job, pmlin
// fuzz), lists the targets and their planted bugs (pmlin targets, pmlin
// mutants), writes large synthetic histories (pmlin gen), runs the
// benchmark suites (pmlin bench) and merges per-thread logs into a history
// (pmlin merge). Its command line is specified by
// docs/cli-contract.md. Main runs it with the targets a program links in:
// command pmlin links the built-in ones, and a user's own pmlin links
// theirs.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pmlin/pmlin/model"
	"github.com/pmlin/pmlin/target"
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
	// progressEvery, if not 0, is how often a long search reports its
	// progress (tests set it short, so that they need no long search).
	progressEvery time.Duration
	// prog is the program's name in usages and replay commands.
	prog string
	// targets are what --target chooses among, the first by default.
	targets []*target.Target
	// child starts a child process of the process-kill modes.
	child func(spec string) *exec.Cmd
	// replay is how a finding's replay script finds this program.
	replay replayProgram
	// models finds the model of a version 2 history's object by name
	// (nil: model.Builtin).
	models func(name string) model.Maker
}

// Main runs the pmlin command line on the process's arguments, with the
// given targets, and exits with its status. The first target is the
// default of --target. A pmlin of one's own, with one's targets linked in,
// is a main package of one line:
//
//	func main() { cli.Main(mytarget.Target(), mwcas.Target()) }
//
// Its process-kill modes (--crash-mode kill) re-execute the program itself
// with a hidden subcommand, so that the child process has the same
// targets; replay commands name the program as it was called.
func Main(targets ...*target.Target) {
	// SIGTERM (kill, a container's stop) is an interrupt like Ctrl-C: the
	// files being written are finished or removed, not left half written.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Command{Name: filepath.Base(os.Args[0]), Targets: targets, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		replay: findReplayProgram()}.Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// Command is the command line with its targets, to run in process (tests,
// package pmlintest).
type Command struct {
	// Name is the program's name in its usage and in replay commands;
	// "" is "pmlin".
	Name string
	// Targets are what --target chooses among; the first is the default.
	Targets []*target.Target
	// Standard input, output and error; nil is none.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Child returns the command that starts a child process of the
	// process-kill modes with the given spec: a process that runs
	// crash.ChildMain with the same targets. Nil: this executable,
	// re-executed with the hidden subcommand "internal-worker SPEC".
	Child func(spec string) *exec.Cmd
	// Models finds the model of a version 2 history's object by name, for
	// pmlin check; nil: model.Builtin. A pmlin of one's own checks its own
	// models so (wrap model.Builtin to keep the built-in ones):
	//
	//	os.Exit(cli.Command{Models: myModels, Targets: ...,
	//		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}.Run(ctx, os.Args[1:]))
	Models func(name string) model.Maker

	// replay is how a finding's replay script finds this program (Main
	// sets it; in process, the script finds $PMLIN or Name on the PATH).
	replay replayProgram
}

// Run runs the command line on args and returns its exit status
// (docs/cli-contract.md).
func (c Command) Run(ctx context.Context, args []string) int {
	e := env{stdin: c.Stdin, stdout: c.Stdout, stderr: c.Stderr, prog: c.Name, targets: c.Targets, child: c.Child, replay: c.replay, models: c.Models}
	if e.stdin == nil {
		e.stdin = strings.NewReader("")
	}
	if e.stdout == nil {
		e.stdout = io.Discard
	}
	if e.stderr == nil {
		e.stderr = io.Discard
	}
	if f, ok := c.Stderr.(*os.File); ok {
		e.stderrTTY = isTerminal(f)
	}
	if e.prog == "" {
		e.prog = "pmlin"
	}
	if e.child == nil {
		e.child = selfCommand
	}
	if err := checkTargets(e); err != nil {
		fmt.Fprintln(e.stderr, "pmlin:", err)
		return exitInput
	}
	return run(ctx, args, e)
}

func run(ctx context.Context, args []string, e env) int {
	root := &cobra.Command{
		Use:   e.prog,
		Short: "Linearizability testing for persistent multi-word synchronization primitives",
		Long: `pmlin tells, with evidence, whether a multi-word CAS primitive is linearizable
under concurrency and still correct after crashes. It checks histories by the
precedence-multigraph method of Cepeda et al., OPODIS 2019.

The history format and this command line (every flag, exit status and JSON
field) are documented in docs/history-format.md and docs/cli-contract.md of
the pmlin repository.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildVersion(e.prog),
	}
	// --version prints the line of pmlin version, nothing around it.
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetArgs(args)
	root.AddCommand(checkCommand(e))
	root.AddCommand(runCommand(e))
	root.AddCommand(fuzzCommand(e))
	root.AddCommand(mutantsCommand(e))
	root.AddCommand(targetsCommand(e))
	root.AddCommand(internalWorkerCommand(e))
	root.AddCommand(genCommand(e))
	root.AddCommand(benchCommand(e))
	root.AddCommand(mergeCommand(e))
	root.AddCommand(gatherCommand(e))
	root.AddCommand(convertCommand(e))
	root.AddCommand(versionCommand(e))
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	// check --json prints its errors on standard output too, so that a
	// script reading the JSON always gets some; those of one history were
	// printed with its verdict, these are the command's.
	jsonErr := func(err error) {
		if c, _, ferr := root.Find(args); ferr == nil && c.Name() == "check" && wantsJSON(args) {
			printErrorJSON(e, describe(err, "", kindUsage))
		}
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(e.stderr, "pmlin:", ee.err)
			jsonErr(ee.err)
		}
		return ee.code
	}
	// Anything else is a usage error from cobra (unknown flag, bad args).
	fmt.Fprintln(e.stderr, "pmlin:", err)
	jsonErr(err)
	return exitInput
}
