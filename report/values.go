package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pmlin/pmlin/history"
)

// opValues writes an operation's values compactly, for the drawings: a
// read's "3=0x5 4=0x7", a cas's "3:0x5→0x9" (and "fail@3" when it
// failed), the words in focus (the anomaly's) first; "" when the input
// could not be re-read.
func opValues(op *history.Op, focus []uint64) string {
	if op == nil {
		return ""
	}
	idx := make([]int, len(op.Addrs))
	for k := range idx {
		idx[k] = k
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		fa, fb := slices.Contains(focus, op.Addrs[a]), slices.Contains(focus, op.Addrs[b])
		switch {
		case fa && !fb:
			return -1
		case fb && !fa:
			return 1
		}
		return 0
	})
	var parts []string
	if op.Status == history.Failed {
		parts = append(parts, fmt.Sprintf("fail@%d", op.FailAddr))
	}
	for _, k := range idx {
		a := op.Addrs[k]
		switch {
		case op.Kind == history.CAS:
			parts = append(parts, fmt.Sprintf("%d:%s→%s", a, history.FormatValue(op.Expected[k]), history.FormatValue(op.New[k])))
		case op.Values != nil:
			parts = append(parts, fmt.Sprintf("%d=%s", a, history.FormatValue(op.Values[k])))
		default:
			parts = append(parts, fmt.Sprintf("%d=?", a))
		}
	}
	return strings.Join(parts, " ")
}

// fit cuts s to n characters, marking the cut with an ellipsis.
func fit(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return ""
	}
	return string(r[:n-1]) + "…"
}
