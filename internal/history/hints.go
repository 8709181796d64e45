package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Hints for the mistakes a recorder or a user makes most: input that is
// not a history at all (compressed, with a byte order mark, binary data, a
// JSON array), a per-thread log with timestamps fed to check instead of to
// pmlin merge, negative numbers, JSON the decoder rejects. These run on
// error paths only (and sniff once, over the first bytes, before the
// first line), so they cost nothing on a well-formed history.

// magics are the first bytes of files that are not text: what they are,
// and how to get the history out.
var magics = []struct {
	prefix, what, fix string
}{
	{"\x1f\x8b", "a gzip-compressed file", "decompress it first: gunzip -c FILE | pmlin check -"},
	{"\x28\xb5\x2f\xfd", "a zstd-compressed file", "decompress it first: zstd -dc FILE | pmlin check -"},
	{"\xfd7zXZ\x00", "an xz-compressed file", "decompress it first: xz -dc FILE | pmlin check -"},
	{"BZh", "a bzip2-compressed file", "decompress it first: bzip2 -dc FILE | pmlin check -"},
	{"PK\x03\x04", "a zip archive", "extract the history first: unzip -p ARCHIVE NAME | pmlin check -"},
	{"\xef\xbb\xbf", "text that starts with a UTF-8 byte order mark (BOM)", "save it as UTF-8 without BOM (e.g. sed -i '1s/^\\xEF\\xBB\\xBF//' FILE)"},
	{"\xff\xfe", "UTF-16 text (little-endian, with a byte order mark)", "convert it to UTF-8 first: iconv -f UTF-16 -t UTF-8 FILE | pmlin check -"},
	{"\xfe\xff", "UTF-16 text (big-endian, with a byte order mark)", "convert it to UTF-8 first: iconv -f UTF-16 -t UTF-8 FILE | pmlin check -"},
}

// binaryKinds are files that are no text at all, named by their first
// bytes, none of which can start a history.
var binaryKinds = []struct{ prefix, what string }{
	{"\x7fELF", "an ELF executable or library"},
	{"\x89PNG\r\n\x1a\n", "a PNG image"},
	{"\xff\xd8\xff", "a JPEG image"},
	{"GIF87a", "a GIF image"},
	{"GIF89a", "a GIF image"},
	{"%PDF-", "a PDF document"},
}

// sniffBytes is how much of the input sniff looks at for bytes that text
// never has: enough for any file that is not text to show one (an
// executable's header, an image's), little enough to cost nothing.
const sniffBytes = 512

// binaryAt is the offset of the first byte of head that UTF-8 text does
// not have (a NUL or another control character but tab, newline, vertical
// tab, form feed, carriage return and escape; a byte that is no part of
// UTF-8), if head has enough of them to be no text at all: at least 4,
// and at least one byte in 16. A history damaged in a place or two keeps
// the reader's error, which names its line; a file that is no text has
// them everywhere. -1: head is text. A character cut by the end of a full
// window (more input follows) is not held against it.
func binaryAt(head []byte, full bool) int {
	first, n := -1, 0
	bad := func(i int) {
		if first < 0 {
			first = i
		}
		n++
	}
	for i := 0; i < len(head); {
		c := head[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && !strings.ContainsRune("\t\n\v\f\r\x1b", rune(c)) || c == 0x7f {
				bad(i)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(head[i:])
		if r == utf8.RuneError && size <= 1 {
			if full && !utf8.FullRune(head[i:]) {
				break
			}
			bad(i)
		}
		i += size
	}
	if n < 4 || 16*n < len(head) {
		return -1
	}
	return first
}

// sniff names, before the first line is read, an input that is not a
// history but something recognisable.
func (r *Reader) sniff() error {
	if ok, err := r.sniffBinary(); ok || err != nil {
		return err
	}
	head, _ := r.br.Peek(sniffBytes) // fewer bytes at the end of a short input
	for _, m := range magics {
		if bytes.HasPrefix(head, []byte(m.prefix)) && (m.prefix != "BZh" || len(head) > 3 && '1' <= head[3] && head[3] <= '9') {
			r.line = 1
			return r.fail(ErrSyntax, nil, "this is %s, not a pmlin history: %s", m.what, m.fix)
		}
	}
	// Input that is not text at all has no lines to blame (line 0), and
	// its bytes are not quoted: they would be a line of garbage.
	for _, k := range binaryKinds {
		if bytes.HasPrefix(head, []byte(k.prefix)) {
			return r.fail(ErrSyntax, nil, "this is %s, not a pmlin history", k.what)
		}
	}
	if at := binaryAt(head, len(head) == sniffBytes); at >= 0 {
		return r.fail(ErrSyntax, nil, "this is binary data, not a pmlin history (byte %#02x at offset %d is not text; a history is text, JSON Lines, or the binary history of pmlin run --format binary)", head[at], at)
	}
	return nil
}

// unknownDirective is the error of a text line that starts with a word
// the format does not know, with a hint when the word says what the file
// really is.
func (r *Reader) unknownDirective(tok []byte) error {
	switch {
	case tok[0] == '[':
		return r.fail(ErrSyntax, tok, "this looks like a JSON array: pmlin reads JSON Lines, one JSON object per line without brackets (jq -c '.[]' FILE converts it)")
	case bytes.Equal(tok, []byte("pmlin-log")):
		return r.fail(ErrSyntax, tok, "this is a log for pmlin merge (pmlin-log), not a history: pmlin merge LOG... -o FILE writes the history")
	case tok[0] == '-':
		return r.fail(ErrSyntax, tok, "process id %q is negative: a process id is a decimal integer from 0 to %d", clip(tok), MaxProc)
	}
	return r.fail(ErrSyntax, tok, "unknown directive %q (expected a process id, init, crash or the header)", clip(tok))
}

// logLine is the error of a text line that looks like a line of a
// per-thread log (<timestamp> <event>) or names a process for a crash, or
// nil if it looks like neither. f are the line's fields; f[0] starts with
// a digit.
func (r *Reader) logLine(f [][]byte) error {
	const merge = "pmlin merge LOG... -o FILE orders a log's steps by timestamp and writes the history"
	isNum := func(b []byte) bool { _, err := parseU64(b); return err == nil }
	switch {
	case len(f) == 2 && bytes.Equal(f[1], tokCrash) && isNum(f[0]):
		return r.fail(ErrSyntax, f[0], "a crash line is just %q, without a process id; %q looks like a line of a per-thread log (<timestamp> crash): %s", "crash", fmt.Sprintf("%s crash", clip(f[0])), merge)
	case len(f) >= 3 && isNum(f[0]) && isNum(f[1]) && (bytes.Equal(f[2], tokInv) || bytes.Equal(f[2], tokRet)):
		return r.fail(ErrSyntax, f[0], "this looks like a line of a per-thread log with a timestamp column (<timestamp> <process> %s ...), not of a history: %s", f[2], merge)
	}
	return nil
}

// negative is the error of a number written with a minus sign, which the
// format has none of: addresses and values are unsigned.
func (r *Reader) negative(tok []byte, what string) error {
	hint := ""
	var v int64
	if _, err := fmt.Sscan(string(tok), &v); err == nil {
		hint = fmt.Sprintf(" (a signed value? write its 64-bit two's complement, %#x)", uint64(v))
	}
	return r.fail(ErrSyntax, tok, "%s %q is negative: addresses and values are unsigned 64-bit numbers%s", what, clip(tok), hint)
}

// jsonKeys are the keys a JSON Lines line may have, in the order of the
// fields of jsonLine.
var jsonKeys = func() []string {
	var keys []string
	t := reflect.TypeFor[jsonLine]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		keys = append(keys, name)
	}
	return keys
}()

// jsonError says what is wrong with a JSON line in pmlin's words, not in
// encoding/json's (which names Go types: "cannot unmarshal number into Go
// struct field jsonLine.inv of type string"). line is the line's content;
// what, if not "", names the value being decoded.
func (r *Reader) jsonError(err error, line []byte, what string) error {
	prefix := ""
	if what != "" {
		prefix = what + ": "
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || (errors.As(err, &syn) && int(syn.Offset) >= len(line)):
		return r.fail(ErrSyntax, nil, "%sthe JSON ends before its object or string does: JSON Lines has one whole object on each line (pretty-printed JSON? jq -c . FILE puts each object on one line)", prefix)
	case errors.As(err, &syn):
		off := max(int(syn.Offset)-1, 0)
		if c := line[off]; (c == 'x' || c == 'X') && off > 0 && line[off-1] == '0' {
			return r.fail(ErrSyntax, line[off-1:off], "%sa hex number is a JSON string in JSON Lines (\"0x10\", not 0x10)", prefix)
		}
		return r.fail(ErrSyntax, line[off:off+1], "%snot valid JSON: unexpected %q", prefix, rune(line[off]))
	case errors.As(err, &typ):
		key := typ.Field
		if key == "" {
			key = "the line"
		} else {
			key = fmt.Sprintf("%q", key)
		}
		return r.fail(ErrSyntax, nil, "%s%s is %s, expected %s", prefix, key, article(typ.Value), jsonExpected(typ.Field))
	}
	if k, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return r.fail(ErrSyntax, nil, "%sunknown key %s (a line's keys are %s)", prefix, k, strings.Join(jsonKeys, ", "))
	}
	return r.fail(ErrSyntax, nil, "%snot valid JSON", prefix)
}

// article puts "a" or "an" before a JSON type name.
func article(what string) string {
	switch {
	case what == "":
		return "of the wrong type"
	case strings.ContainsRune("aeiou", rune(what[0])):
		return "an " + what
	}
	return "a " + what
}

// jsonExpected says what a key of a JSON line holds.
func jsonExpected(key string) string {
	switch key {
	case "header":
		return `a string ("pmlin-history v1")`
	case "inv":
		return "a string naming the operation (read, cas, ...)"
	case "addrs":
		return "an array of addresses"
	case "words":
		return "an array of arrays, one per word ([address, expected, new] for a cas)"
	case "values":
		return "an array of values"
	case "crash":
		return "true"
	case "":
		return "a JSON object"
	}
	return "a number or a string holding one"
}
