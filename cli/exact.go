package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pmlin/pmlin/exact"
	"github.com/pmlin/pmlin/history"
	"github.com/pmlin/pmlin/report"
)

func runExact(ctx context.Context, e env, path string, mode history.Mode, asJSON bool) error {
	in, name, _, closeIn, err := openInput(e, path)
	if err != nil {
		return &exitError{exitInput, err}
	}
	defer closeIn()
	h, err := history.ReadAll(in, name)
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
	v := report.ExactVerdict(h, mode, res)
	v.File = name
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
			fmt.Fprintf(e.stdout, "  no linearization of the operations at lines %s\n", joinLines(v.Failing))
		}
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
