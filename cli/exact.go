package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pmlin/pmlin/exact"
	"github.com/pmlin/pmlin/history"
)

// exactResult is the JSON of check --exact: the contract's fields plus the
// search's own.
type exactResult struct {
	Linearizable bool   `json:"linearizable"`
	Mode         string `json:"mode"`
	Operations   int    `json:"operations"`
	Exact        bool   `json:"exact"`
	States       int    `json:"states"`
	Components   int    `json:"components"`
	// Order is a linearization (operations by invocation line), when one
	// exists; Failing the operations of a component that has none.
	Order     []int64 `json:"order,omitempty"`
	Failing   []int64 `json:"failing,omitempty"`
	Anomalies []any   `json:"anomalies"`
}

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
	res, err := exact.Check(ctx, h, exact.Options{Mode: mode})
	if errors.Is(err, exact.ErrTooLarge) {
		return &exitError{exitInput, fmt.Errorf("%s: %w (use pmlin check without --exact)", name, err)}
	}
	if err != nil {
		return &exitError{exitInput, err}
	}
	lines := func(ids []int) []int64 {
		out := make([]int64, len(ids))
		for k, id := range ids {
			out[k] = h.Ops[id].Line
		}
		return out
	}
	out := exactResult{Linearizable: res.Linearizable, Mode: mode.String(), Operations: len(h.Ops), Exact: true,
		States: res.States, Components: res.Components, Order: lines(res.Order), Failing: lines(res.Failing), Anomalies: []any{}}
	if asJSON {
		b, _ := json.Marshal(out)
		fmt.Fprintln(e.stdout, string(b))
	} else {
		verdict := "LINEARIZABLE"
		if !res.Linearizable {
			verdict = "NOT LINEARIZABLE"
		}
		fmt.Fprintf(e.stdout, "%s: %s (%s mode, exact search)\n", name, verdict, mode)
		fmt.Fprintf(e.stdout, "  operations %d, components %d, states explored %d\n", len(h.Ops), res.Components, res.States)
		if res.Linearizable {
			fmt.Fprintf(e.stdout, "  a linearization (invocation lines): %s\n", joinLines(out.Order))
		} else {
			fmt.Fprintf(e.stdout, "  no linearization of the operations at lines %s\n", joinLines(out.Failing))
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
