package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pmlin/pmlin/internal/crash"
)

func mutantsCommand(e env) *cobra.Command {
	var name string
	if len(e.targets) > 0 {
		name = e.targets[0].Name
	}
	cmd := &cobra.Command{
		Use:   "mutants [--target NAME]",
		Short: "List the planted bugs that --mutant accepts",
		Long: `mutants lists the planted bugs of a target (by default the first one, see
pmlin targets) that run and fuzz accept with --mutant, one per line: NAME,
two spaces, a description.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := crash.FindTarget(e.targets, name)
			if err != nil {
				return &exitError{exitInput, err}
			}
			for _, m := range t.Mutants {
				fmt.Fprintf(e.stdout, "%s  %s\n", m.Name, m.Description)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "target", name, "the target whose planted bugs to list")
	return cmd
}

func targetsCommand(e env) *cobra.Command {
	return &cobra.Command{
		Use:   "targets",
		Short: "List the primitives that --target accepts",
		Long: `targets lists the primitives that run, fuzz and mutants accept with --target,
one per line: NAME, two spaces, a description, and the workload flags of
the optional operations it has, if any ("[has --swaps, --fail-values]"),
or, for a data structure, its model ("[model queue]": its workload is the
model's operations, its history of version 2). The first is the default.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, t := range e.targets {
				c := crash.DefaultConfig()
				c.Target = t
				has := ""
				if t.Model != "" {
					has = " [model " + t.Model + "]"
				} else if o, err := crash.ProbeOptional(c); err == nil && o != (crash.Optional{}) {
					has = " [has " + o.String() + "]"
				}
				fmt.Fprintf(e.stdout, "%s  %s%s\n", t.Name, t.Description, has)
			}
			return nil
		},
	}
}

// checkTargets refuses targets that cannot be used, that share a name, or
// whose parameter would be a flag that run or fuzz already has.
func checkTargets(e env) error {
	reserved := map[string]bool{"help": true}
	for _, cmd := range []*cobra.Command{runCommand(env{}), fuzzCommand(env{})} {
		cmd.Flags().VisitAll(func(f *pflag.Flag) { reserved[f.Name] = true })
	}
	seen := map[string]bool{}
	for i, t := range e.targets {
		if err := t.Check(); err != nil {
			return fmt.Errorf("target %d: %w", i+1, err)
		}
		if seen[t.Name] {
			return fmt.Errorf("two targets are called %s", t.Name)
		}
		seen[t.Name] = true
		for _, p := range t.Params {
			if reserved[p.Name] {
				return fmt.Errorf("target %s: its parameter --%s would hide the flag of pmlin run and fuzz of that name", t.Name, p.Name)
			}
		}
	}
	return nil
}
