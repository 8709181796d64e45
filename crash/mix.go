package crash

import (
	"fmt"

	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// The mix of a campaign (FuzzConfig.Mix): one run in MixEvery also
// exercises the target's optional operations, those its instance has
// (probed once, on a scratch region): a MixSwaps share of swaps, and
// failed cas that report the values they read. The other runs are the
// template's, unchanged.
const (
	MixEvery = 4
	MixSwaps = 0.2
)

// Optional says which optional operations of package target a target's
// instance has.
type Optional struct {
	Swap       bool // a target.Swapper: --swaps
	FailValues bool // a target.FailReporter: --fail-values
}

// String lists them as the flags that use them ("" for none).
func (o Optional) String() string {
	switch {
	case o.Swap && o.FailValues:
		return "--swaps, --fail-values"
	case o.Swap:
		return "--swaps"
	case o.FailValues:
		return "--fail-values"
	}
	return ""
}

// ProbeOptional tells which optional operations c's target has, from an
// instance it builds on a scratch region in memory (and discards).
func ProbeOptional(c Config) (Optional, error) {
	tc, err := c.targetConfig()
	if err != nil {
		return Optional{}, err
	}
	n, err := c.Target.Size(tc)
	if err != nil {
		return Optional{}, fmt.Errorf("target %s: %w", c.Target.Name, err)
	}
	r, err := pmem.NewMemory(n, pmem.Options{})
	if err != nil {
		return Optional{}, err
	}
	defer r.Close()
	in, err := c.Target.New(r, tc)
	if err != nil {
		return Optional{}, fmt.Errorf("target %s: a scratch instance (to see which optional operations it has): %w", c.Target.Name, err)
	}
	_, swap := in.(target.Swapper)
	_, report := in.(target.FailReporter)
	return Optional{Swap: swap, FailValues: report}, nil
}

// mixer applies the mix to the runs of a campaign.
type mixer struct {
	swaps, report bool
}

// newMixer probes c's target for its optional operations.
func newMixer(c Config) (mixer, error) {
	o, err := ProbeOptional(c)
	if err != nil {
		return mixer{}, err
	}
	return mixer{swaps: o.Swap && c.Driver.Reads < 1, report: o.FailValues}, nil
}

// apply makes run i of the campaign (its configuration rc) one of the mix
// if its turn has come. The swaps come out of the cas's share, or out of
// the reads' when the cas's is smaller.
func (m mixer) apply(rc *Config, i int64) {
	if i%MixEvery != MixEvery-1 {
		return
	}
	d := &rc.Driver
	if m.swaps {
		d.Swaps = MixSwaps
		d.Reads = min(d.Reads, 1-MixSwaps)
	}
	d.FailValues = m.report
}

// String describes the mix for the campaign's summary ("" for none).
func (m mixer) String() string {
	switch {
	case m.swaps && m.report:
		return fmt.Sprintf("one run in %d also %g%% swaps and failed cas that report the values they read", MixEvery, 100*MixSwaps)
	case m.swaps:
		return fmt.Sprintf("one run in %d also %g%% swaps", MixEvery, 100*MixSwaps)
	case m.report:
		return fmt.Sprintf("one run in %d with failed cas that report the values they read", MixEvery)
	}
	return ""
}
