package pmem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// File format constants.
const (
	// HeaderSize is the size in bytes of the header at the start of a region
	// file; the data words start right after it, page-aligned.
	HeaderSize = 4096
	// formatVersion is the only header version this package reads and writes.
	formatVersion = 1
	// lineBytes is the size of a cache line, the unit of Flush.
	lineBytes = 64
	// wordBytes is the size of a word.
	wordBytes = 8
	// LineWords is the number of words in a line.
	LineWords = lineBytes / wordBytes
	// maxWords bounds the size of a region (2^40 words = 8 TiB).
	maxWords = 1 << 40

	// headerFields is the number of header bytes covered by the checksum.
	headerFields = 40
	// headerUsed is the number of meaningful header bytes (fields + checksum).
	headerUsed = headerFields + 4
)

// magic identifies a pmlin region file.
var magic = [8]byte{'P', 'M', 'L', 'I', 'N', 'R', 'G', 'N'}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors that describe why a file is refused. They are wrapped with the path
// and details; test them with errors.Is.
var (
	errBadMagic  = errors.New("not a pmlin region file (bad magic)")
	errChecksum  = errors.New("region header is damaged (checksum mismatch)")
	errVersion   = errors.New("unsupported region format version")
	errGeometry  = errors.New("region header has an invalid geometry")
	errTruncated = errors.New("region file is truncated")
	errSize      = errors.New("region file size does not match its header")
	errLocked    = errors.New("region file is in use by another process")
)

// fileHeader is the decoded header of a region file.
type fileHeader struct {
	Version   uint32
	Words     uint64 // number of data words
	LineBytes uint32
	WordBytes uint32
	Flags     uint64 // reserved, zero
}

// FileSize is the size in bytes a file with this header must have.
func (h fileHeader) FileSize() int64 { return HeaderSize + int64(h.Words)*wordBytes }

// Layout of the header (little endian):
//
//	[0,8)   magic "PMLINRGN"
//	[8,12)  version
//	[12,16) header size (4096)
//	[16,24) data words
//	[24,28) line bytes (64)
//	[28,32) word bytes (8)
//	[32,40) flags (0)
//	[40,44) CRC-32C (Castagnoli) of bytes [0,40)
//	[44,4096) zero
func (h fileHeader) encode() []byte {
	b := make([]byte, HeaderSize)
	copy(b[0:8], magic[:])
	binary.LittleEndian.PutUint32(b[8:], h.Version)
	binary.LittleEndian.PutUint32(b[12:], HeaderSize)
	binary.LittleEndian.PutUint64(b[16:], h.Words)
	binary.LittleEndian.PutUint32(b[24:], h.LineBytes)
	binary.LittleEndian.PutUint32(b[28:], h.WordBytes)
	binary.LittleEndian.PutUint64(b[32:], h.Flags)
	binary.LittleEndian.PutUint32(b[40:], crc32.Checksum(b[:headerFields], castagnoli))
	return b
}

func newHeader(words uint64) fileHeader {
	return fileHeader{Version: formatVersion, Words: words, LineBytes: lineBytes, WordBytes: wordBytes}
}

// parseHeader decodes and validates the first bytes of a region file. It
// checks, in this order, length, magic, checksum, version and geometry, so the
// error names the first thing wrong. It does not check the file size (see
// fileHeader.FileSize). It never panics, whatever b holds.
func parseHeader(b []byte) (fileHeader, error) {
	if len(b) < 8 || [8]byte(b[0:8]) != magic {
		if len(b) < 8 && len(b) > 0 && string(b) == string(magic[:len(b)]) {
			return fileHeader{}, fmt.Errorf("%w: %d bytes, the header needs %d", errTruncated, len(b), headerUsed)
		}
		return fileHeader{}, errBadMagic
	}
	if len(b) < headerUsed {
		return fileHeader{}, fmt.Errorf("%w: %d bytes, the header needs %d", errTruncated, len(b), headerUsed)
	}
	want := binary.LittleEndian.Uint32(b[40:])
	if got := crc32.Checksum(b[:headerFields], castagnoli); got != want {
		return fileHeader{}, fmt.Errorf("%w: stored %#08x, computed %#08x", errChecksum, want, got)
	}
	h := fileHeader{
		Version:   binary.LittleEndian.Uint32(b[8:]),
		Words:     binary.LittleEndian.Uint64(b[16:]),
		LineBytes: binary.LittleEndian.Uint32(b[24:]),
		WordBytes: binary.LittleEndian.Uint32(b[28:]),
		Flags:     binary.LittleEndian.Uint64(b[32:]),
	}
	if h.Version != formatVersion {
		return fileHeader{}, fmt.Errorf("%w %d (this build reads %d)", errVersion, h.Version, formatVersion)
	}
	if hs := binary.LittleEndian.Uint32(b[12:]); hs != HeaderSize {
		return fileHeader{}, fmt.Errorf("%w: header size %d, want %d", errGeometry, hs, HeaderSize)
	}
	switch {
	case h.LineBytes != lineBytes:
		return fileHeader{}, fmt.Errorf("%w: line size %d, want %d", errGeometry, h.LineBytes, lineBytes)
	case h.WordBytes != wordBytes:
		return fileHeader{}, fmt.Errorf("%w: word size %d, want %d", errGeometry, h.WordBytes, wordBytes)
	case h.Words == 0 || h.Words > maxWords:
		return fileHeader{}, fmt.Errorf("%w: %d words (1..%d allowed)", errGeometry, h.Words, uint64(maxWords))
	case h.Flags != 0:
		return fileHeader{}, fmt.Errorf("%w: unknown flags %#x", errGeometry, h.Flags)
	}
	return h, nil
}
