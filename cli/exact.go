package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pmlin/pmlin/exact"
	"github.com/pmlin/pmlin/history"
	"github.com/pmlin/pmlin/report"
	"github.com/pmlin/pmlin/shrink"
)

func runExact(ctx context.Context, e env, path string, mode history.Mode, asJSON bool) error {
	in, name, _, closeIn, err := openInput(e, path)
	if err != nil {
		return &exitError{exitInput, err}
	}
	defer closeIn()
	h, err := history.ReadAll(in, name)
	// A recording cut short is decided as far as it goes (ReadAll), then
	// said to be cut short (exit 2).
	cut := error(nil)
	if errors.Is(err, history.ErrCutShort) {
		cut, err = err, nil
	}
	if err != nil {
		return &exitError{exitInput, err}
	}
	if len(h.Ops) == 0 {
		return &exitError{exitInput, noOperation(name)}
	}
	res, err := exact.Check(ctx, h, exact.Options{Mode: mode})
	if errors.Is(err, exact.ErrTooLarge) {
		return &exitError{exitInput, fmt.Errorf("%s: %w (use pmlin check without --exact)", name, err)}
	}
	if err != nil {
		return &exitError{exitInput, err}
	}
	var witness []int
	if !res.Linearizable {
		if witness, err = shrink.ExactWitness(ctx, h, res.Failing, shrink.WitnessOptions{Mode: mode}); err != nil {
			return &exitError{exitInput, err}
		}
	}
	v := report.ExactVerdict(h, mode, res, witness)
	v.File = name
	if cut != nil {
		v.Error = describe(cut, name, kindMalformed)
	}
	if asJSON {
		if err := report.JSON(e.stdout, v); err != nil {
			return &exitError{exitInput, err}
		}
	} else {
		verdict := "LINEARIZABLE"
		if !res.Linearizable {
			verdict = "NOT LINEARIZABLE"
		}
		fmt.Fprintf(e.stdout, "%s: %s (%s mode, exact search)\n", name, verdict, mode)
		fmt.Fprintf(e.stdout, "  operations %d, components %d, states explored %d\n", len(h.Ops), res.Components, res.States)
		if res.Linearizable {
			fmt.Fprintf(e.stdout, "  a linearization (invocation lines): %s\n", joinLines(v.Order))
		} else {
			fmt.Fprintf(e.stdout, "  no linearization: the %d operations at lines %s cannot be ordered (a witness cut down from the %d operations of a component with no linearization)\n",
				len(v.Witness), joinLines(v.Witness), len(v.Failing))
		}
		if cut != nil {
			cutNote(e.stdout)
		}
	}
	if cut != nil {
		return &exitError{exitInput, afterVerdict{cut}}
	}
	if !res.Linearizable {
		return &exitError{exitViolated, nil}
	}
	return nil
}

func joinLines(ls []int64) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = fmt.Sprint(l)
	}
	return strings.Join(s, " ")
}
