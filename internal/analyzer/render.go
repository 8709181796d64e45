package analyzer

import (
	"fmt"
	"strings"

	"github.com/pmlin/pmlin/internal/history"
)

// The one renderer: every sentence of an explanation is made here, from
// the data of an Edge, an Evidence, a Staleness or an anomaly's summary,
// never from the graph. The analyzer renders once, when it builds the
// result; the data stay in the result for programs (JSON) and drawings.

// opNamer describes operations by the line of their invocation.
type opNamer interface {
	// describe describes an operation: "line 12 (process 2 cas)" (its
	// name by the Namer, then what it is).
	describe(line int64) string
	// kindOf names its kind: "read", "cas" or "swap" ("" for genesis or
	// a line that is no operation).
	kindOf(line int64) string
}

// renderer makes the sentences: ops describes operations, names names
// the other events (responses, crashes) and the operations named alone.
type renderer struct {
	ops   opNamer
	names Namer
}

func val(v uint64) string { return history.FormatValue(v) }

// observedVerb is what an operation did with a value it observed, by the
// edge's rule.
func observedVerb(r Rule) string {
	switch r {
	case RuleExpected:
		return "expected"
	case RuleReplaced:
		return "replaced"
	case RulePlaced:
		return "must have replaced"
	}
	return "read"
}

// edge renders an edge of the multigraph.
func (r renderer) edge(e Edge) string {
	from, to := r.ops.describe(e.From), r.ops.describe(e.To)
	switch e.Rule {
	case RuleRead, RuleExpected, RuleReplaced, RulePlaced:
		if e.From == 0 && (e.Rule == RuleRead || e.Rule == RuleExpected) {
			return fmt.Sprintf("%s found address %d = %s, its initial value", to, e.Word, val(e.Value))
		}
		if e.From == 0 {
			return fmt.Sprintf("%s %s address %d = %s, its initial value", to, observedVerb(e.Rule), e.Word, val(e.Value))
		}
		return fmt.Sprintf("%s %s address %d = %s, written by %s", to, observedVerb(e.Rule), e.Word, val(e.Value), from)
	case RuleReadFirst:
		return fmt.Sprintf("%s read address %d = %s, which %s replaced, so the read came first", from, e.Word, val(e.Value), to)
	case RuleFailedAfter:
		return fmt.Sprintf("%s failed at address %d expecting %s, so it needs a write that replaced that value there; %s is that write", to, e.Word, val(e.Value), from)
	case RuleReturned:
		return fmt.Sprintf("%s returned %s, before %s was invoked", from, r.names.Returned(e.RetLine), to)
	case RuleCutOffStrict:
		return fmt.Sprintf("%s was cut off by %s and, %s, took effect before it (strict), so before %s was invoked",
			from, r.names.Crashes(e.CrashLine), r.observedBy(e.ObservedBy), to)
	case RuleNextOperation:
		return r.recovery(e)
	}
	return fmt.Sprintf("%s comes before %s (%s)", from, to, e.Kind)
}

// observedBy is the clause naming the operation whose observation makes
// a cut-off cas take effect.
func (r renderer) observedBy(line int64) string {
	if line == 0 {
		return "completed to explain a failed cas"
	}
	return fmt.Sprintf("as %s observed its value", r.names.Op(line))
}

// recovery renders a recovery edge, naming the operations of its process
// that were cut off in between and passed the constraint on.
func (r renderer) recovery(e Edge) string {
	from, to := r.ops.describe(e.From), r.ops.describe(e.To)
	if len(e.Skipped) == 0 {
		return fmt.Sprintf("%s was cut off by %s and, %s, took effect before its process's next operation %s",
			from, r.names.Crashes(e.CrashLine), r.observedBy(e.ObservedBy), to)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s was cut off by %s and, %s, took effect before its process's next operation that stays in the history: its next operation, %s, was cut off by %s and left it",
		from, r.names.Crashes(e.CrashLine), r.observedBy(e.ObservedBy), r.names.Op(e.Skipped[0].Op), r.names.Crashes(e.Skipped[0].Crash))
	for _, s := range e.Skipped[1:] {
		fmt.Fprintf(&b, ", and so was %s, by %s", r.names.Op(s.Op), r.names.Crashes(s.Crash))
	}
	fmt.Fprintf(&b, ", so the constraint passes to %s", to)
	return b.String()
}

// summary is the data of an anomaly's first sentence.
type summary struct {
	kind Kind
	// ops: the operation(s) the sentence is about (a fork: both);
	// cycle: its length is the cycle's.
	ops   []int64
	word  uint64
	value uint64
	// writer of value at word: a line, 0 for the initial value.
	writer int64
	// init is the word's initial value (dangling).
	init uint64
	// rule: how the operation observed the value (its reads-from rule).
	rule Rule
	// contra: an unexplained failure that reported, at the address it
	// blamed, the value it expected there (value).
	contra bool
}

// forkEnd is the end of a fork's sentence: why two writes that replaced
// the same value cannot both have happened, by their kinds (a swap always
// takes effect, so it is the value it returned that is wrong).
func (r renderer) forkEnd(a, b int64) string {
	switch ka, kb := r.ops.kindOf(a), r.ops.kindOf(b); {
	case ka == "swap" && kb == "swap":
		return "only one of them replaced it; a swap always takes effect, so the other returned a value it did not replace"
	case ka == "swap" || kb == "swap":
		return "only one of them replaced it: either the cas did not succeed or the swap returned a value it did not replace"
	}
	return "only one of them can have succeeded"
}

// tookVerb is observedVerb for an operation that took a value no write
// explains: a cas "succeeded expecting" it.
func tookVerb(r Rule) string {
	if r == RuleExpected {
		return "succeeded expecting"
	}
	return observedVerb(r)
}

// summary renders an anomaly's first sentence.
func (r renderer) summary(s summary) string {
	writer := "its initial value"
	if s.writer > 0 {
		writer = "written by " + r.ops.describe(s.writer)
	}
	switch s.kind {
	case Dangling:
		return fmt.Sprintf("%s %s address %d = %s, a value nothing wrote there (its initial value is %s)",
			r.ops.describe(s.ops[0]), tookVerb(s.rule), s.word, val(s.value), val(s.init))
	case Fork:
		return fmt.Sprintf("%s and %s both replaced %s at address %d (%s); values are never written twice, so %s",
			r.ops.describe(s.ops[0]), r.ops.describe(s.ops[1]), val(s.value), s.word, writer, r.forkEnd(s.ops[0], s.ops[1]))
	case UnreachableWrite:
		return fmt.Sprintf("%s %s address %d = %s, %s, but that write is not on address %d's chain of writes from its initial value",
			r.ops.describe(s.ops[0]), tookVerb(s.rule), s.word, val(s.value), writer, s.word)
	case UnexplainedFailure:
		if s.contra {
			return fmt.Sprintf("%s failed at address %d expecting %s, yet reports having read %s there: a failure blames an address that held another value, so it contradicts itself",
				r.ops.describe(s.ops[0]), s.word, val(s.value), val(s.value))
		}
		return fmt.Sprintf("%s failed at address %d expecting %s (%s), but no successful cas or swap ever replaced that value there, so the address always held it",
			r.ops.describe(s.ops[0]), s.word, val(s.value), writer)
	case Cycle:
		return fmt.Sprintf("%d operations must each come before the next, and the last before the first", len(s.ops))
	}
	return string(s.kind)
}

// staleness renders a stale observation, made by the rule's verb (by a
// read: the read).
func (r renderer) staleness(s Staleness, rule Rule, read bool) string {
	verb, obj := observedVerb(rule), "it"
	if read {
		obj = "the read"
	}
	versions := "versions"
	if s.Behind == 1 {
		versions = "version"
	}
	from := "its initial value"
	if s.Writer != 0 {
		from = "written by " + r.ops.describe(s.Writer)
	}
	done := "returned " + r.names.Returned(s.LatestRetLine)
	if s.LatestRetLine == 0 {
		done = "was cut off by a crash after taking effect"
	}
	return fmt.Sprintf("%s %s address %d = %s (%s), %d %s behind: %s had written %s there and %s, before %s was invoked",
		r.ops.describe(s.Op), verb, s.Word, val(s.Value), from, s.Behind, versions, r.ops.describe(s.LatestWriter), val(s.Latest), done, obj)
}

// explanation joins an anomaly's sentences: the summary, a cycle's edges,
// the evidence, the staleness.
func explanation(a *Anomaly) string {
	var b strings.Builder
	b.WriteString(a.Summary)
	if a.Kind == Cycle {
		reasons := make([]string, len(a.Edges))
		for k, e := range a.Edges {
			reasons[k] = e.Reason
		}
		b.WriteString(": " + strings.Join(reasons, "; "))
	}
	if len(a.Evidence) > 0 {
		reasons := make([]string, len(a.Evidence))
		for k, ev := range a.Evidence {
			reasons[k] = ev.Reason
		}
		b.WriteString(". Evidence: " + strings.Join(reasons, "; "))
	}
	if len(a.Staleness) > 0 {
		reasons := make([]string, len(a.Staleness))
		for k, s := range a.Staleness {
			reasons[k] = s.Reason
		}
		b.WriteString(". Staleness: " + strings.Join(reasons, "; "))
	}
	return b.String()
}

// evidence renders a fact of an anomaly's story.
func (r renderer) evidence(ev Evidence) string {
	switch ev.Kind {
	case EvidenceCutOff:
		return r.cutOff(ev)
	case EvidenceCrash:
		if len(ev.Crashes) > 1 {
			return fmt.Sprintf("%s came before %s, %s after them", r.list(ev.Before), r.names.Crashes(ev.Crashes...), r.list(ev.After))
		}
		return fmt.Sprintf("%s came before %s, %s after it", r.list(ev.Before), r.names.Crashes(ev.Crash), r.list(ev.After))
	case EvidenceRecovery:
		return r.recovered(ev)
	case EvidenceElsewhere:
		if ev.WriterStatus == "fail" {
			s := fmt.Sprintf("%s was the new value for address %d of %s, a cas that failed", val(*ev.Value), *ev.WrittenAt, r.ops.describe(ev.Writer))
			if *ev.WrittenAt != *ev.Word {
				s += fmt.Sprintf(", not for address %d", *ev.Word)
			}
			return s
		}
		if *ev.WrittenAt == *ev.Word {
			return fmt.Sprintf("%s was written to address %d by %s", val(*ev.Value), *ev.WrittenAt, r.ops.describe(ev.Writer))
		}
		return fmt.Sprintf("%s was written to address %d by %s, not to address %d", val(*ev.Value), *ev.WrittenAt, r.ops.describe(ev.Writer), *ev.Word)
	case EvidenceExpected:
		return r.expected(ev)
	}
	return string(ev.Kind)
}

// cutOff renders how a cut-off cas was completed, and under which rule.
func (r renderer) cutOff(ev Evidence) string {
	var b strings.Builder
	b.WriteString(r.ops.describe(ev.Op))
	if ev.Crash != 0 {
		fmt.Fprintf(&b, " was cut off by %s", r.names.Crashes(ev.Crash))
	} else {
		b.WriteString(" was still pending at the end of the history")
	}
	if r.ops.kindOf(ev.Op) == "swap" {
		b.WriteString(" and took effect")
	} else {
		b.WriteString(" and completed as a success")
	}
	if ev.ObservedBy != 0 {
		fmt.Fprintf(&b, ", because %s observed its value %s at address %d", r.ops.describe(ev.ObservedBy), val(*ev.Value), *ev.Word)
	} else {
		b.WriteString(", to explain a failed cas")
	}
	switch ev.Rule {
	case "strict":
		b.WriteString("; the strict rule places it before the crash")
	case "recoverable":
		if ev.Target == 0 {
			b.WriteString("; the recoverable rule places it before its process's next operation, and none stays in the history")
			break
		}
		fmt.Fprintf(&b, "; the recoverable rule places it before %s, the next operation of its process that stays in the history", r.ops.describe(ev.Target))
		for k, s := range ev.Skipped {
			sep := ", after"
			if k > 0 {
				sep = " and"
			}
			fmt.Fprintf(&b, "%s %s (cut off by %s)", sep, r.names.Op(s.Op), r.names.Crashes(s.Crash))
		}
	case "durable":
		b.WriteString("; the durable rule lets it take effect any time after its invocation")
	case "end":
		b.WriteString("; it may take effect any time after its invocation")
	}
	return b.String()
}

// recovered renders what the reads after a crash found, and what that
// says of the anomaly's write across the crash.
func (r renderer) recovered(ev Evidence) string {
	var b strings.Builder
	fmt.Fprintf(&b, "after %s", r.names.Crashes(ev.Crash))
	short := r.names.Op(ev.Op)
	for k := 0; k < len(ev.Values); {
		read := ev.Values[k].Read
		j := k
		for j < len(ev.Values) && ev.Values[j].Read == read {
			j++
		}
		sep := ", "
		if k > 0 {
			sep = "; "
		}
		if ev.Values[k].Full {
			fmt.Fprintf(&b, "%sthe read of every word at %s returned ", sep, r.names.Op(read))
		} else {
			words := make([]uint64, j-k)
			for i, v := range ev.Values[k:j] {
				words[i] = v.Word
			}
			fmt.Fprintf(&b, "%s%s, the first read of %s after it, returned ", sep, r.ops.describe(read), addresses(words))
		}
		for i, v := range ev.Values[k:j] {
			if i > 0 {
				b.WriteString(" and ")
			}
			fmt.Fprintf(&b, "%s at address %d (%s)", val(v.Value), v.Word, r.valueOrigin(v, short))
		}
		k = j
	}
	var lost, kept, other []uint64
	for _, v := range ev.Values {
		switch v.Fate {
		case "old":
			lost = append(lost, v.Word)
		case "new":
			kept = append(kept, v.Word)
		default:
			other = append(other, v.Word)
		}
	}
	torn := ev.RetLine != 0 || ev.Rule == "strict" || oneRead(ev.Values)
	switch {
	case ev.Op == 0:
	case len(lost) > 0 && ev.RetLine != 0:
		fmt.Fprintf(&b, ": the %s of %s, which returned %s, was lost at %s", r.write(ev.Op), short, r.names.Returned(ev.RetLine), addresses(lost))
	case len(lost) > 0 && ev.Rule == "strict":
		fmt.Fprintf(&b, ": %s's write, which the strict rule places before the crash, did not survive it at %s", short, addresses(lost))
	case len(lost) > 0:
		fmt.Fprintf(&b, ": %s's write was not in place at %s (the %s rule lets it take effect later)", short, addresses(lost), ev.Rule)
	case len(kept) > 0 && len(other) > 0:
		fmt.Fprintf(&b, ": %s's write was there at %s but not at %s", short, addresses(kept), addresses(other))
		if torn {
			b.WriteString(": a torn " + r.ops.kindOf(ev.Op))
		}
	case len(kept) > 0 && len(ev.Unknown) == 0:
		fmt.Fprintf(&b, ": %s's write survived the crash", short)
	}
	if len(lost) > 0 && len(kept) > 0 {
		fmt.Fprintf(&b, ", but it was at %s", addresses(kept))
		if torn {
			b.WriteString(": a torn " + r.ops.kindOf(ev.Op))
		}
	}
	if len(ev.Unknown) > 0 {
		sep := "; "
		if len(ev.Values) == 0 {
			sep = ", "
		}
		fmt.Fprintf(&b, "%snothing shows what recovery left at %s (no read of it came before a write that may have changed it)", sep, addresses(ev.Unknown))
	}
	return b.String()
}

// write names a write that returned: "successful cas" or "swap".
func (r renderer) write(line int64) string {
	if k := r.ops.kindOf(line); k == "swap" {
		return k
	}
	return "successful cas"
}

// oneRead reports whether one read returned all the values.
func oneRead(vs []WordValue) bool {
	for _, v := range vs {
		if v.Read != vs[0].Read {
			return false
		}
	}
	return true
}

// valueOrigin says where a value read after a crash came from: the
// anomaly's write (short names it) or another.
func (r renderer) valueOrigin(v WordValue, short string) string {
	switch {
	case v.Fate == "new":
		return short + "'s new value"
	case v.Fate == "old":
		return "the value " + short + " replaced"
	case v.Writer == 0:
		return "its initial value"
	case v.Writer < 0:
		return "a value nothing wrote there"
	}
	return "written by " + r.names.Op(v.Writer)
}

// expected renders whether a failed cas's expected value was still there
// when it returned.
func (r renderer) expected(ev Evidence) string {
	op := r.ops.describe(ev.Op)
	if !*ev.StillThere {
		return fmt.Sprintf("%s failed at address %d expecting %s; %s, the write that replaced that value, was invoked before the cas returned %s, so the value may have been gone",
			op, *ev.Word, val(*ev.Value), r.ops.describe(ev.ReplacedBy), r.names.Returned(ev.RetLine))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s failed at address %d although its expected value %s was there throughout: it had been observed there before the cas was invoked, and ", op, *ev.Word, val(*ev.Value))
	if ev.ReplacedBy == 0 {
		fmt.Fprintf(&b, "nothing ever replaced it")
	} else {
		fmt.Fprintf(&b, "the write that replaced it, %s, was invoked only after the cas returned %s", r.ops.describe(ev.ReplacedBy), r.names.Returned(ev.RetLine))
	}
	if ev.Read != 0 {
		fmt.Fprintf(&b, "; %s read it there after the cas returned", r.ops.describe(ev.Read))
	}
	return b.String()
}

// list lists operations: "A", "A and B", "A, B and C".
func (r renderer) list(lines []int64) string {
	s := make([]string, len(lines))
	for k, l := range lines {
		s[k] = r.ops.describe(l)
	}
	return andList(s)
}

// addresses lists addresses: "address 3", "addresses 3 and 4".
func addresses(ws []uint64) string {
	s := make([]string, len(ws))
	for k, w := range ws {
		s[k] = fmt.Sprint(w)
	}
	if len(ws) == 1 {
		return "address " + s[0]
	}
	return "addresses " + andList(s)
}

func andList(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
