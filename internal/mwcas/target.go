package mwcas

import (
	"fmt"

	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// DefaultDescriptors is each worker's share of the descriptor pool when
// the PMwCAS runs as a target: a small pool, so that descriptors are
// reused often (the --descriptors parameter).
const DefaultDescriptors = 4

// Target is the PMwCAS as a target of pmlin's harness (package target):
// pmlin's built-in "pmwcas", with its planted bugs (Mutants) and three
// parameters: --descriptors, and the data layout's --stride and
// --line-offset (Config.Stride, Config.LineOffset), which pmlin fuzz
// varies run by run. It is lock-free: its one wait by design, for a
// descriptor that epoch-based reclamation holds back, is declared
// (pmem.Worker.Wait).
func Target() *target.Target {
	ms := Mutants()
	muts := make([]target.Mutant, len(ms))
	for i, m := range ms {
		muts[i] = target.Mutant{Name: m.Name, Description: m.Description}
	}
	return &target.Target{
		Name:        "pmwcas",
		Description: "the built-in persistent multi-word CAS (Wang, Levandoski, Larson, ICDE 2018): descriptors, dirty bits, helping, recovery",
		Mutants:     muts,
		Params: []target.Param{{Name: "descriptors", Default: fmt.Sprint(DefaultDescriptors),
			Fuzz:  []string{fmt.Sprint(DefaultDescriptors), "2", "1", "1"},
			Usage: "pmwcas: descriptors per thread (1 to 65536; small pools reuse them often)"},
			{Name: "stride", Default: "1", Fuzz: []string{"1", "1", "2", "8"},
				Usage: "pmwcas: region words from one data word to the next (1 to 64; 8 puts each data word on a cache line of its own)"},
			{Name: "line-offset", Default: "0", Fuzz: []string{"0", "0", "3", "5", "7"},
				Usage: "pmwcas: position of data word 0 in its cache line (0 to 7)"}},
		Size: func(c target.Config) (uint64, error) {
			mc, err := targetConfig(c)
			if err != nil {
				return 0, err
			}
			return RegionWords(mc)
		},
		New: func(r *pmem.Region, c target.Config) (target.Instance, error) {
			return instance(r, c, New)
		},
		Open: func(r *pmem.Region, c target.Config) (target.Instance, error) {
			return instance(r, c, Open)
		},
	}
}

// targetConfig is the PMwCAS configuration of a target configuration.
func targetConfig(c target.Config) (Config, error) {
	d, err := c.Int("descriptors", 1, 1<<16)
	if err != nil {
		return Config{}, err
	}
	stride, err := c.Int("stride", 1, maxStride)
	if err != nil {
		return Config{}, err
	}
	off, err := c.Int("line-offset", 0, lineWords-1)
	if err != nil {
		return Config{}, err
	}
	return Config{Words: c.Words, MaxWorkers: c.Workers, DescriptorsPerWorker: d, MaxK: c.MaxK,
		Stride: uint64(stride), LineOffset: uint64(off), Mutant: c.Mutant}, nil
}

func instance(r *pmem.Region, c target.Config, build func(*pmem.Region, Config) (*PMwCAS, error)) (target.Instance, error) {
	mc, err := targetConfig(c)
	if err != nil {
		return nil, err
	}
	m, err := build(r, mc)
	if err != nil {
		return nil, err
	}
	return AsTarget(m), nil
}

// AsTarget returns m as an instance of a target: its CAS takes the
// harness's words, it is a target.Swapper and a target.FailReporter, its Recover says what it did in a sentence, and
// DataOffset (PMwCAS.DataOffset) follows its layout.
func AsTarget(m *PMwCAS) target.Instance {
	x := targetInstance{PMwCAS: m, words: make([][]Word, len(m.ws))}
	all := make([]Word, uint64(len(m.ws))*m.l.maxK) // one allocation, not one per worker
	for i := range x.words {
		lo := uint64(i) * m.l.maxK
		x.words[i] = all[lo : lo : lo+m.l.maxK]
	}
	return x
}

type targetInstance struct {
	*PMwCAS
	words [][]Word // per worker: the operation's words, as this package's
}

// convert returns words as this package's, in the worker's scratch
// space, or nil for a worker out of range (whose error the PMwCAS gives).
func (x targetInstance) convert(worker int, words []target.Word) []Word {
	if worker < 0 || worker >= len(x.words) {
		return nil
	}
	ws := x.words[worker][:0]
	for _, w := range words {
		ws = append(ws, Word{Addr: w.Addr, Old: w.Old, New: w.New})
	}
	x.words[worker] = ws
	return ws
}

func (x targetInstance) CAS(worker int, words []target.Word) (bool, uint64, error) {
	return x.PMwCAS.CAS(worker, x.convert(worker, words))
}

// CASReport makes the PMwCAS a target.FailReporter.
func (x targetInstance) CASReport(worker int, words []target.Word, read []uint64) (bool, uint64, error) {
	return x.PMwCAS.CASReport(worker, x.convert(worker, words), read)
}

// Swap makes the PMwCAS a target.Swapper.
func (x targetInstance) Swap(worker int, words []target.Word, old []uint64) error {
	return x.PMwCAS.Swap(worker, x.convert(worker, words), old)
}

func (x targetInstance) Recover(worker int) (string, error) {
	st, err := x.PMwCAS.Recover(worker)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d words rolled forward, %d rolled back, %d RDCSS undone, %d dirty bits cleared, %d descriptors freed",
		st.RolledForward, st.RolledBack, st.RDCSSUndone, st.DirtyCleared, st.Descriptors), nil
}

var (
	_ target.Swapper      = targetInstance{}
	_ target.FailReporter = targetInstance{}
)
