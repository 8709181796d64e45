package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/pmlin/pmlin/internal/atomicfile"
	"github.com/pmlin/pmlin/internal/crash"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/target"
)

// execFlags are the flags of pmlin run and fuzz that crash-test a program
// of one's own instead of a target (--exec): the one home of their names,
// and of the rule that a target's flags do not go with them.
type execFlags struct {
	command    string
	killWithin time.Duration
	timeout    time.Duration
}

func (x *execFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&x.command, "exec", "", `crash-test a program of one's own instead of a target: "PROGRAM [ARGS]" (split as sh does, nothing expanded), `+
		`which records itself with pmlin's recorders and follows the protocol of recorders/README.md; it is killed --crashes times a run, then recovers`)
	fs.DurationVar(&x.killWithin, "kill-within", crash.DefaultKillWithin, "--exec: each kill comes a delay drawn from the seed in [0, this] after the program said it was ready")
	fs.DurationVar(&x.timeout, "exec-timeout", crash.DefaultExecTimeout, "--exec: a start of the program not ready within this, or a recovering start not ended, is killed and reported stuck")
}

// exec is the program the flags name (nil without --exec), killed kills
// times a run. With --exec, a flag of a target's run (the workload, the
// crash images, the mix, --systematic; any that Config.RegisterFlags and
// Mix.RegisterFlags define but --seed and --crashes) or one of also is a
// usage error: the program chooses its own workload, and its crashes are
// kills. Without it, --kill-within and --exec-timeout are.
func (x *execFlags) exec(fs *pflag.FlagSet, targets []*target.Target, kills int, also ...string) (*crash.Exec, error) {
	if x.command == "" && fs.Changed("exec") {
		return nil, fmt.Errorf(`--exec "": no program`)
	}
	if x.command == "" {
		for _, name := range []string{"exec", "kill-within", "exec-timeout"} {
			if fs.Changed(name) {
				return nil, fmt.Errorf("--%s goes with --exec PROGRAM (a program of one's own): without it pmlin runs a target", name)
			}
		}
		return nil, nil
	}
	var c crash.Config
	var mix crash.Mix
	targetFlags := pflag.NewFlagSet("target", pflag.ContinueOnError)
	c.RegisterFlags(targetFlags, targets)
	mix.RegisterFlags(targetFlags)
	var bad []string
	targetFlags.VisitAll(func(f *pflag.Flag) {
		if f.Name != "seed" && f.Name != "crashes" && fs.Changed(f.Name) {
			bad = append(bad, "--"+f.Name)
		}
	})
	for _, name := range also {
		if fs.Changed(name) {
			bad = append(bad, "--"+name)
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return nil, fmt.Errorf("%s: not with --exec: the program chooses its own workload, and its crashes are process kills (--crashes, --kill-within)", strings.Join(bad, ", "))
	}
	e := &crash.Exec{Command: x.command, Kills: kills, KillWithin: x.killWithin, Timeout: x.timeout}
	if err := e.Check(); err != nil {
		return nil, err
	}
	return e, nil
}

// runExecOnce is pmlin run --exec: one run of the program with the given
// seed, its history written to out, and, with check, decided.
func runExecOnce(ctx context.Context, e env, x *crash.Exec, seed uint64, out runOut, check, asJSON bool, mode history.Mode) error {
	name, w, msg := "<stdout>", e.stdout, e.stdout
	var f *atomicfile.File
	if out.path != "" && out.path != "-" {
		af, err := atomicfile.Create(out.path, 0o644, out.force)
		if err != nil {
			return &exitError{exitInput, outputError(out.path, err)}
		}
		defer af.Abort() // a run that fails leaves no file
		name, w, f = out.path, af, af
	} else {
		msg = e.stderr
	}
	o, err := crash.RunExec(ctx, *x, seed)
	if err != nil {
		return &exitError{exitInput, err}
	}
	if _, err := io.Copy(w, bytes.NewReader(o.History)); err != nil {
		return &exitError{exitInput, outputError(out.path, err)}
	}
	if f != nil {
		if err := f.Commit(); err != nil {
			return &exitError{exitInput, outputError(out.path, err)}
		}
	}
	res := o.Run
	summary := msg
	if asJSON {
		summary = e.stderr
	}
	// The operations on objects of a version 2 history (pmlin_inv_op) are
	// the ones that are not on words.
	objects := ""
	if n := res.Operations - res.Reads - res.CASes - res.Swaps; n > 0 {
		objects = fmt.Sprintf(", %d on objects", n)
	}
	fmt.Fprintf(summary, "pmlin run: %s, %d operations (%d reads, %d cas, %d swaps%s), %d of %d kills landed, %d lines -> %s\n",
		x.Command, res.Operations, res.Reads, res.CASes, res.Swaps, objects, res.Crashes, len(o.Kills), res.Lines, name)
	if res.Canceled {
		return &exitError{exitInput, fmt.Errorf("interrupted")}
	}
	if !check {
		if len(res.Anomalies) > 0 {
			fmt.Fprintln(msg)
			writeRunAnomalies(msg, res.Anomalies)
			return &exitError{exitViolated, nil}
		}
		if o.Undecided != nil {
			return &exitError{exitInput, o.Undecided}
		}
		return nil
	}
	v, err := o.Decide(ctx, mode)
	if err != nil {
		return &exitError{exitInput, err}
	}
	return showVerdict(msg, name, v, asJSON)
}

// execReplay is what a replay script of a finding of --exec adds: the
// directory the campaign ran in (the program's path and arguments may be
// relative to it), and the kills.
func execReplay(f *crash.ExecFinding) (dir string, notes []string) {
	dir, _ = os.Getwd()
	notes = append(notes, fmt.Sprintf("The run's seed is %d; it drew these kills of the program, and gave each start its PMLIN_SEED:", f.Seed))
	for i, k := range f.Kills {
		notes = append(notes, fmt.Sprintf("  kill %d: %s", i+1, k))
	}
	return dir, notes
}
