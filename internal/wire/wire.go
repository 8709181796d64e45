// Package wire is the binary history's words (docs/history-format.md,
// "Binary histories"): its blocks, its records and their head words, for
// the packages that write or read them (history, the driver). It is a
// pmlin extension for recorders that cannot afford the text, above all the
// driver, whose workers' logs go to the file as they are. It holds the
// same events as the text format; a file is little-endian 64-bit words:
// the magic word, then blocks, the last one an end block.
//
// A block is a header word (type in bits 0-7, flags in bits 8-31, a field
// in bits 32-63), a length word (the payload's words) and the payload:
//
//	serial   events in history order, each one line of the text form
//	section  opens a concurrent section; payload: its streams' process ids
//	stream   the timestamped records of one stream of the open section
//	         (field: the stream's index in the section; flag last: the
//	         stream has no more records in this section)
//	end      the history may end here; payload: its lines so far
//
// A section's events are the records of its streams merged by timestamp,
// the least first; on equal timestamps by the tie rule of
// recorders/README.md (rule 4, package internal/tie), then the stream
// listed first. The section ends at the next serial, section or end block.
//
// A serial record is a head word (kind in bits 0-7, k in bits 8-31, the
// process id in bits 32-63) followed by the payload its kind and k say. A
// stream record (version 2) is one word holding the kind (bits 0-3), k
// (bits 4-11) and the timestamp (bits 12-63), then the payload: the
// driver's workers store one word per record for what took two in
// version 1 (a head, k in bits 8-31, and a timestamp word), about a
// quarter of the bytes a recording stores, copies and writes. Version 1
// files are still read (internal/history/binread.go).
package wire

// Magic is the first word of a binary history, as bytes: a first byte
// that is not UTF-8 text, the name and the version. Writers write
// version 2.
const Magic = "\x89PMLINB2"

// MagicV1 is the magic of version 1, whose stream records are a head word
// and a timestamp word.
const MagicV1 = "\x89PMLINB1"

// Block types.
const (
	BlockSerial  = 1
	BlockSection = 2
	BlockStream  = 3
	BlockEnd     = 4
)

// BlockLast is the stream block flag "the stream's last block in its
// section" (bit 8 of the header word).
const BlockLast = 1 << 8

// MaxBlockWords is the longest block payload a reader accepts: a block of
// a gigabyte is refused.
const MaxBlockWords = 1 << 27

// BlockHeader is a block's header word.
func BlockHeader(typ int, flags int, field uint32) uint64 {
	return uint64(typ) | uint64(flags) | uint64(field)<<32
}

// Record kinds. Events are one line each.
const (
	RecInvRead       = 1 // k addresses
	RecInvCAS        = 2 // k (address, expected, new) triples
	RecRetValues     = 3 // k values: a read's or a swap's response
	RecRetOK         = 4 // nothing
	RecRetFail       = 5 // the blamed address
	RecInvSwap       = 6 // k (address, new) pairs
	RecRetFailValues = 7 // the blamed address, then k values
	RecCrash         = 8 // serial only; k 0
	RecText          = 9 // serial only; k bytes of text, zero-padded to whole words
	MaxRecKind       = RecText
)

// Record kinds of version 2 (objects of any model; a history whose
// header line, a text record, says "pmlin-history v2"). For both, k is
// the payload's words, so that a reader sizes them as any other record.
// A value is two words: its symbol (model.Symbol: 0 a number) and its
// number (0 for a symbol).
const (
	// RecInvOp is "p inv OBJECT OP V1 ... Vn": word 0 holds n (bits
	// 0-7), the bytes of the object's name (bits 8-15) and of the
	// operation's (bits 16-23); then both names' bytes, one after the
	// other, packed as a text record's; then n values.
	RecInvOp = 10
	// RecRetOp is "p ret V1 ... Vn": word 0 holds n, then n values; or
	// "p ret ?": word 0 is RetUnknown, alone.
	RecRetOp = 11
)

// RetUnknown is word 0 of the RecRetOp record of an unknown response.
const RetUnknown = 256

// OpHead is word 0 of a RecInvOp record: args values, names of objLen
// and opLen bytes (each below 256).
func OpHead(args, objLen, opLen int) uint64 {
	return uint64(args) | uint64(objLen)<<8 | uint64(opLen)<<16
}

// OpHeadArgs, OpHeadObj and OpHeadOp decode OpHead.
func OpHeadArgs(w uint64) int { return int(w & 0xff) }
func OpHeadObj(w uint64) int  { return int(w >> 8 & 0xff) }
func OpHeadOp(w uint64) int   { return int(w >> 16 & 0xff) }

// OpInvWords is the payload's words (k) of a RecInvOp record of args
// values and names of objLen and opLen bytes.
func OpInvWords(args, objLen, opLen int) int { return 1 + (objLen+opLen+7)/8 + 2*args }

// RecWords is the number of payload words of a record of kind with k words
// (-1 for an unknown kind). Every reader asks it of every record: tables,
// not a switch, so that it inlines.
func RecWords(kind, k int) int {
	if kind == RecText {
		return (k + 7) / 8
	}
	if uint(kind) >= uint(len(recPerK)) {
		return -1
	}
	return int(recPerK[kind])*k + int(recFixed[kind])
}

// recPerK and recFixed are RecWords of the kinds but text: words per k, and
// words besides (-1 marks an unknown kind).
var (
	recPerK  = [16]int8{RecInvRead: 1, RecInvCAS: 3, RecRetValues: 1, RecInvSwap: 2, RecRetFailValues: 1, RecInvOp: 1, RecRetOp: 1}
	recFixed = [16]int8{0: -1, RecRetFail: 1, RecRetFailValues: 1, 12: -1, 13: -1, 14: -1, 15: -1}
)

// IsInvocation reports whether a record kind is an invocation.
func IsInvocation(kind int) bool {
	return kind == RecInvRead || kind == RecInvCAS || kind == RecInvSwap
}

// SerialKMask is the field of k in a serial record's head (24 bits).
const SerialKMask = 1<<24 - 1

// SerialHead is a serial record's head word.
func SerialHead(kind, k int, proc int32) uint64 {
	return uint64(kind) | uint64(k)<<8 | uint64(uint32(proc))<<32
}

// SerialKind, SerialK and SerialProc decode a serial record's head word
// (SerialProc as the format's unsigned field: a process id is at most
// 2^31-1).
func SerialKind(h uint64) int    { return int(h & 0xff) }
func SerialK(h uint64) int       { return int(h >> 8 & SerialKMask) }
func SerialProc(h uint64) uint64 { return h >> 32 }

// MaxStreamK and MaxStamp are the largest k and timestamp a stream record
// holds (version 2: 8 and 52 bits).
const (
	MaxStreamK = 1<<8 - 1
	MaxStamp   = 1<<52 - 1
)

// StreamHead is the head word of a stream record of kind (a kind of the
// streams, 1 to 7), k (1 to MaxStreamK) and timestamp ts (at most
// MaxStamp). Unchecked: the driver's workers call it for every record and
// keep to those ranges themselves.
func StreamHead(kind, k int, ts uint64) uint64 {
	return uint64(kind) | uint64(k)<<4 | ts<<12
}

// StreamKind, StreamK and StreamStamp decode a stream record's head word.
func StreamKind(h uint64) int     { return int(h & 15) }
func StreamK(h uint64) int        { return int(h >> 4 & MaxStreamK) }
func StreamStamp(h uint64) uint64 { return h >> 12 }
