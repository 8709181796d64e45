package analyzer

import "slices"

// One fault in a history is often reported many times: a write lost by a
// crash makes a fork (the lost write and the next one replaced the same
// value) on each word of the multi-word cas, then every later write of
// those words is off its word's path because its version is, each an
// unreachable-write naming the previous one. The first of these is the
// root; the others are linked to it (Anomaly.Root) so that reports count
// them under it instead of listing them as equals.

// culprits are the operations a finding holds at fault: all of its
// operations except, for an unreachable write and an unexplained failure,
// the write whose value it replaced or expected (its second operation),
// which only names the value and is at fault, if at all, in an anomaly of
// its own.
func (f *finding) culprits() []int32 {
	if (f.kind == UnreachableWrite || f.kind == UnexplainedFailure) && len(f.ops) > 1 {
		return f.ops[:1]
	}
	return f.ops
}

// implies is the one rule that groups anomalies: an earlier anomaly a
// implies a later one b when b involves an operation that a holds at
// fault (a.culprits). Such a b is a consequence of a in this sense: every
// operation of an anomaly is part of its evidence, so with a's faulty
// operations removed from the history b could not be reported as it is.
// The cascade of a lost write is exactly this chain: a fork names the lost
// write's cas and the cas that replaced the same value (the loser); the
// first unreachable write names the loser as its version, the next one
// that write, and so on; a torn cas's cycle names the cas, which the forks
// name too. Two anomalies that share no faulty operation stay apart, each
// a root, however close they are: the rule never guesses from words,
// values or time alone.
func implies(a, b *finding) bool {
	for _, o := range a.culprits() {
		if o >= 0 && slices.Contains(b.ops, o) { // (genesis is no one's fault)
			return true
		}
	}
	return false
}

// roots links each finding to its root, in list order: the root of a
// finding is that of the first earlier finding that implies it, or itself.
// The first finding is always a root, and a root always comes before the
// findings it implies.
func roots(fs []finding) []int {
	root := make([]int, len(fs))
	for k := range fs {
		root[k] = k
		for j := range k {
			if implies(&fs[j], &fs[k]) {
				root[k] = root[j]
				break
			}
		}
	}
	return root
}
