package histgen

import (
	"fmt"
	"strings"

	"github.com/pmlin/pmlin/internal/history"
)

// Case is a random history with its provenance, for test messages.
type Case struct {
	// Base is the linearizable history Small generated (under Config.Mode).
	Base *history.History
	// History is Base after Mutations, in order (Base itself if none).
	History   *history.History
	Mutations []MutationKind
	Config    SmallConfig
	Seed      uint64
}

func (c Case) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, %+v, mutations [", c.Seed, c.Config)
	for i, k := range c.Mutations {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(k.String())
	}
	b.WriteString("]")
	return b.String()
}

// Random generates a base history with Small and applies 0 to 2 random
// mutations, so that about half of the outputs are linearizable in
// cfg.Mode (see RandomCase).
func Random(cfg SmallConfig, seed uint64) *history.History {
	return RandomCase(cfg, seed).History
}

// weights of the mutation kinds in Random: the kinds that certainly break
// linearizability when they find a strong target are common; those that
// keep it (ReorderLater) or depend on the mode or the target are there for
// variety.
var weights = [numKinds]int{
	StaleRead:                6,
	TornRead:                 4,
	FutureRead:               2,
	PhantomRead:              1,
	SpuriousFailure:          3,
	SpuriousFailureRewrite:   4,
	WrongAddressFailure:      4,
	FalseSuccess:             3,
	LostWrite:                4,
	ReorderEarlier:           3,
	ReorderLater:             2,
	DropOp:                   3,
	DuplicateRead:            2,
	InsertCrash:              2,
	CrashedEffectVisibleLate: 3,
	CrashedEffectAfterCrash:  3,
	CrashedEffectPastCutOff:  3,
	StaleSwap:                4,
	StaleFailValues:          3,
	ContradictingFailure:     1,
}

// weightsFor adjusts the weights to the configuration: the kinds whose
// result is linearizable in its mode (crashed effects that the mode allows,
// a crash inserted into a history that the mode already completes) become
// rarer, and the kinds of swaps and failures that report values are left
// out when it makes neither (so that such configurations draw what they
// drew before those kinds existed).
func weightsFor(c SmallConfig) [numKinds]int {
	w := weights
	if c.Swaps == 0 && c.FailValues == 0 {
		for _, k := range swapKinds {
			w[k] = 0
		}
	}
	m := c.Mode
	switch m {
	case history.Recoverable:
		w[CrashedEffectAfterCrash] = 1
		w[InsertCrash] = 1
	case history.Durable:
		w[CrashedEffectPastCutOff] = 1
		w[CrashedEffectVisibleLate] = 1
		w[CrashedEffectAfterCrash] = 1
		w[InsertCrash] = 1
	}
	return w
}

// noMutation is the probability, in percent, that Random returns the base
// history unchanged, per mode. Mutations sometimes keep linearizability (a
// weak target, ReorderLater, a crashed effect in a mode that allows it, or
// one mutation undoing another), so it is below one half; the weaker the
// mode, the more often.
var noMutation = [...]int{history.Strict: 32, history.Recoverable: 30, history.Durable: 22}

// RandomCase is Random with the base history and the mutations applied.
func RandomCase(cfg SmallConfig, seed uint64) Case {
	rng := newRand(seed, 2)
	base := small(cfg, rng)
	c := Case{Base: base, History: base, Config: cfg.normalized(), Seed: seed}
	mode := c.Config.Mode
	if int(mode) >= len(noMutation) {
		mode = history.Durable
	}
	if rng.IntN(100) < noMutation[mode] {
		return c
	}
	n := 1
	if rng.IntN(2) == 0 {
		n = 2
	}
	wc := c.Config
	wc.Mode = mode
	weights := weightsFor(wc)
	total := 0
	for _, w := range weights {
		total += w
	}
	for len(c.Mutations) < n {
		applied := false
		for range 12 {
			r := rng.IntN(total)
			k := StaleRead
			for ; r >= weights[k]; k++ {
				r -= weights[k]
			}
			if out, ok := Mutate(c.History, k, rng); ok {
				c.History, c.Mutations = out, append(c.Mutations, k)
				applied = true
				break
			}
		}
		if !applied {
			break
		}
	}
	return c
}
