package mwcas

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
)

// Word flags, in the three top bits of a region word.
const (
	// DirtyBit marks a word (or status) whose value may not be durable yet.
	DirtyBit uint64 = 1 << 63
	descBit  uint64 = 1 << 62 // the word holds a descriptor pointer
	rdcssBit uint64 = 1 << 61 // the word holds an RDCSS (word entry) pointer
	flagBits        = DirtyBit | descBit | rdcssBit

	// ValueMask is the set of bits a caller's value may use; MaxValue the
	// largest value.
	ValueMask uint64 = rdcssBit - 1
	MaxValue         = ValueMask

	// MaxK is the largest number of words of one MwCAS.
	MaxK = 64
)

// Swap descriptors (Swap): the count word carries swapFlag beside the
// number of words; a slot's old field holds swapUnknown until phase 1
// records the value it is about to displace, and gets frozenBit once the
// descriptor is installed over that value, before the status is decided:
// then it is final, the value the swap displaced (installSwap).
const (
	swapFlag    uint64 = 1 << 32
	swapUnknown        = descBit | rdcssBit // no data word holds both flags
	frozenBit          = DirtyBit
)

// Status states (bits 0-7 of a status word; bits 8-15 hold the slot that
// failed, bit 63 the dirty bit).
const (
	stFree      uint64 = 0
	stUndecided uint64 = 1
	stSucceeded uint64 = 2
	stFailed    uint64 = 3
)

// validStatus tells whether st is a status word the algorithm can leave
// in a region: free, undecided, or decided (possibly dirty), with a failed
// slot below maxK only when failed.
func validStatus(st, maxK uint64) bool {
	v := st &^ DirtyBit
	switch {
	case v&^0xffff != 0 || state(v) > stFailed:
		return false
	case st&DirtyBit != 0 && state(v) < stSucceeded:
		return false
	case state(v) != stFailed:
		return v>>8 == 0
	}
	return uint64(failedSlot(v)) < maxK
}

func state(st uint64) uint64          { return st & 0xff }
func failedSlot(st uint64) int        { return int(st>>8) & 0xff }
func descPtr(d uint64) uint64         { return descBit | d<<8 }
func rdcssPtr(d, s uint64) uint64     { return rdcssBit | d<<8 | s }
func ptrDesc(v uint64) uint64         { return (v &^ flagBits) >> 8 }
func ptrSlot(v uint64) uint64         { return v & 0xff }
func isDesc(v uint64) bool            { return v&descBit != 0 }
func isRDCSS(v uint64) bool           { return v&rdcssBit != 0 }
func roundLine(n uint64) uint64       { return (n + 7) &^ 7 }
func descWordsFor(maxK uint64) uint64 { return roundLine(2 + 3*maxK) }

// Config is the geometry of a PMwCAS and the planted bug to run.
type Config struct {
	// Words is the number of data words (addresses 0 .. Words-1).
	Words uint64
	// MaxWorkers bounds the worker ids (0 .. MaxWorkers-1). Default 64.
	MaxWorkers int
	// DescriptorsPerWorker is each worker's share of the descriptor pool.
	// A worker whose descriptors all wait for reclamation waits (with a
	// region access per attempt) for the others to move on. Default 8.
	DescriptorsPerWorker int
	// MaxK is the largest k of a MwCAS. Default 8, at most 64.
	MaxK int
	// Stride is the distance, in region words, from one data word to the
	// next. The default 1 packs 8 data words in each 64-byte cache line, so
	// flushing one persists its neighbours too; 8 gives each data word a
	// line of its own. At most 64.
	Stride uint64
	// LineOffset is the position of data word 0 in its cache line (0..7):
	// with Stride 1, data words 8-LineOffset-1 and 8-LineOffset fall on
	// different lines instead of 7 and 8. Default 0.
	LineOffset uint64
	// Mutant names a planted bug (see Mutants); "" runs the correct code.
	Mutant string
}

func (c Config) withDefaults() Config {
	if c.MaxWorkers == 0 {
		c.MaxWorkers = 64
	}
	if c.DescriptorsPerWorker == 0 {
		c.DescriptorsPerWorker = 8
	}
	if c.MaxK == 0 {
		c.MaxK = 8
	}
	if c.Stride == 0 {
		c.Stride = 1
	}
	return c
}

func (c Config) check() error {
	switch {
	case c.Words == 0 || c.Words > 1<<40:
		return fmt.Errorf("mwcas: Words = %d (1..2^40 allowed)", c.Words)
	case c.MaxWorkers < 1 || c.MaxWorkers > 1<<16:
		return fmt.Errorf("mwcas: MaxWorkers = %d (1..65536 allowed)", c.MaxWorkers)
	case c.DescriptorsPerWorker < 1 || c.DescriptorsPerWorker > 1<<16:
		return fmt.Errorf("mwcas: DescriptorsPerWorker = %d (1..65536 allowed)", c.DescriptorsPerWorker)
	case c.MaxK < 1 || c.MaxK > MaxK:
		return fmt.Errorf("mwcas: MaxK = %d (1..%d allowed)", c.MaxK, MaxK)
	case c.Stride < 1 || c.Stride > maxStride:
		return fmt.Errorf("mwcas: Stride = %d (1..%d allowed)", c.Stride, maxStride)
	case c.LineOffset >= lineWords:
		return fmt.Errorf("mwcas: LineOffset = %d (0..%d allowed)", c.LineOffset, lineWords-1)
	}
	return CheckMutant(c.Mutant)
}

// lineWords is the number of region words in a cache line (pmem.LineWords);
// maxStride bounds Config.Stride.
const (
	lineWords = 8
	maxStride = 64
)

// layout places the superblock, data and descriptors in the region.
type layout struct {
	words, maxWorkers, perWorker, maxK uint64
	stride, lineOffset                 uint64
	dataBase, descBase, descWords      uint64
	descs                              uint64 // pool size
	total                              uint64 // region words needed
}

func newLayout(c Config) layout {
	l := layout{
		words:      c.Words,
		maxWorkers: uint64(c.MaxWorkers),
		perWorker:  uint64(c.DescriptorsPerWorker),
		maxK:       uint64(c.MaxK),
		stride:     c.Stride,
		lineOffset: c.LineOffset,
		dataBase:   sbWords,
	}
	// The data area ends on a line boundary, so descriptors never share a
	// line with data words.
	l.descBase = l.dataBase + roundLine(l.data(l.words-1)+1-l.dataBase)
	l.descWords = descWordsFor(l.maxK)
	l.descs = l.maxWorkers * l.perWorker
	l.total = l.descBase + l.descs*l.descWords
	return l
}

func (l *layout) data(a uint64) uint64 { return l.dataBase + l.lineOffset + a*l.stride }

// DataOffset is the region offset of data word a (0 <= a < Words) in this
// PMwCAS's layout (see Config.Stride and Config.LineOffset). Tools that
// must see the raw region, such as the harness's full read after a crash
// and recovery (which must not help or clean what recovery left behind),
// read it there.
func (m *PMwCAS) DataOffset(a uint64) uint64 { return m.l.data(a) }

func (l *layout) status(d uint64) uint64    { return l.descBase + d*l.descWords }
func (l *layout) count(d uint64) uint64     { return l.status(d) + 1 }
func (l *layout) entry(d, s uint64) uint64  { return l.status(d) + 2 + 3*s } // addr; +1 old; +2 new
func (l *layout) descLines(k uint64) uint64 { return roundLine(2+3*k) / 8 }

// RegionWords is the number of region words a PMwCAS with this configuration
// needs (see pmem.Create and pmem.NewMemory).
func RegionWords(c Config) (uint64, error) {
	c = c.withDefaults()
	if err := c.check(); err != nil {
		return 0, err
	}
	return newLayout(c).total, nil
}

// Superblock: region words 0-7.
const (
	sbWords   = 8
	sbMagic   = 0x3130534143574d50 // "PMWCAS01" little endian
	sbVersion = 1
)

var crcTable = crc64.MakeTable(crc64.ECMA)

// Errors of opening and recovering.
var (
	// ErrNotFormatted: the region holds no PMwCAS superblock.
	ErrNotFormatted = errors.New("mwcas: region holds no PMwCAS (no superblock)")
	// ErrFormatted: New was given a region that already holds a PMwCAS.
	ErrFormatted = errors.New("mwcas: region already holds a PMwCAS (use Open)")
	// ErrCorrupt: the region's contents break an invariant that no crash
	// of the correct algorithm can break.
	ErrCorrupt = errors.New("mwcas: region is corrupt")
	// ErrGeometry: Open was asked for a geometry other than the region's.
	ErrGeometry = errors.New("mwcas: region geometry differs from the requested one")
	// ErrNeedsRecovery: an operation was attempted on an opened PMwCAS
	// before Recover.
	ErrNeedsRecovery = errors.New("mwcas: Recover must run before operations")
)

// Superblock word 6 holds the data layout, encoded so that the default
// layout is 0 (what builds before the layout option wrote there).
func layoutWord(l layout) uint64 { return (l.stride - 1) | l.lineOffset<<32 }

func superblock(l layout) [sbWords]uint64 {
	sb := [sbWords]uint64{sbMagic, sbVersion, l.words, l.maxWorkers, l.perWorker, l.maxK, layoutWord(l)}
	sb[7] = sbChecksum(sb)
	return sb
}

func sbChecksum(sb [sbWords]uint64) uint64 {
	var b [8 * 7]byte
	for i := range 7 {
		binary.LittleEndian.PutUint64(b[8*i:], sb[i])
	}
	return crc64.Checksum(b[:], crcTable)
}

// parseSuperblock checks a superblock and returns the configuration in it.
func parseSuperblock(sb [sbWords]uint64) (Config, error) {
	if sb[0] != sbMagic {
		if sb == ([sbWords]uint64{}) {
			return Config{}, ErrNotFormatted
		}
		return Config{}, fmt.Errorf("%w: bad magic %#x", ErrNotFormatted, sb[0])
	}
	if got := sbChecksum(sb); got != sb[7] {
		return Config{}, fmt.Errorf("%w: superblock checksum %#x, computed %#x", ErrCorrupt, sb[7], got)
	}
	if sb[1] != sbVersion {
		return Config{}, fmt.Errorf("%w: superblock version %d, this build reads %d", ErrCorrupt, sb[1], sbVersion)
	}
	if sb[3] > 1<<16 || sb[4] > 1<<16 || sb[5] > MaxK {
		return Config{}, fmt.Errorf("%w: superblock geometry %v", ErrCorrupt, sb[2:6])
	}
	c := Config{Words: sb[2], MaxWorkers: int(sb[3]), DescriptorsPerWorker: int(sb[4]), MaxK: int(sb[5]),
		Stride: sb[6]&0xffffffff + 1, LineOffset: sb[6] >> 32}
	if err := c.check(); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return c, nil
}
