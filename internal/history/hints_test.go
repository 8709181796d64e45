package history

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func gzipped(s string) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	io.WriteString(w, s)
	w.Close()
	return b.String()
}

// TestRecorderMistakeHints: inputs that are not histories, or not quite,
// get a message that names the real cause (and never encoding/json's
// words), with the line and, where one token is to blame, its column.
func TestRecorderMistakeHints(t *testing.T) {
	tests := []struct {
		name, in string
		line     int64
		col      int
		want     string
	}{
		{"gzip", gzipped("1 inv read 1\n1 ret 0\n"), 1, 0, "gzip-compressed file, not a pmlin history: decompress it first: gunzip -c FILE"},
		{"zstd", "\x28\xb5\x2f\xfd\x00\x00", 1, 0, "zstd-compressed"},
		{"bzip2", "BZh91AY&SY", 1, 0, "bzip2-compressed"},
		{"not bzip2", "BZhello\n", 1, 1, `unknown directive "BZhello"`},
		{"BOM", "\xef\xbb\xbfpmlin-history v1\n1 inv read 1\n1 ret 0\n", 1, 0, "byte order mark (BOM), not a pmlin history: save it as UTF-8 without BOM"},
		{"BOM before JSON", "\xef\xbb\xbf{\"p\":1,\"inv\":\"read\",\"addrs\":[1]}\n", 1, 0, "byte order mark"},
		{"JSON array", `[{"p":1,"inv":"read","addrs":[1]},{"p":1,"ret":[0]}]` + "\n", 1, 1, "JSON array: pmlin reads JSON Lines, one JSON object per line without brackets (jq -c '.[]' FILE"},
		{"JSON array over lines", "# recorded\n[\n  {\"p\":1,\"inv\":\"read\",\"addrs\":[1]}\n]\n", 2, 1, "JSON array"},
		{"pretty-printed JSON", "{\n  \"p\": 1,\n  \"inv\": \"read\"\n}\n", 1, 0, "JSON Lines has one whole object on each line (pretty-printed JSON? jq -c . FILE"},
		{"negative address", "1 inv read 3 -1\n", 1, 14, `address "-1" is negative: addresses and values are unsigned 64-bit numbers (a signed value? write its 64-bit two's complement, 0xffffffffffffffff)`},
		{"negative value", "1 inv read 3\n1 ret -5\n", 2, 7, `returned value "-5" is negative: addresses and values are unsigned 64-bit numbers (a signed value? write its 64-bit two's complement, 0xfffffffffffffffb)`},
		{"negative cas value", "1 inv cas 3:-2:5\n", 1, 13, `expected value "-2" is negative`},
		{"negative init", "init 3=-7\n", 1, 8, `initial value "-7" is negative`},
		{"negative JSON value", `{"p":1,"inv":"read","addrs":[-3]}` + "\n", 1, 0, `address "-3" is negative`},
		{"negative JSON string", `{"p":1,"inv":"cas","words":[[1,"-3",5]]}` + "\n", 1, 0, `expected value "-3" is negative`},
		{"negative process", "-1 inv read 3\n", 1, 1, `process id "-1" is negative`},
		{"negative JSON process", `{"p":-1,"inv":"read","addrs":[3]}` + "\n", 1, 0, `process id "-1" is negative`},
		{"timestamp column", "1042 1 inv read 10 11\n1057 1 ret 0 0\n", 1, 1, "this looks like a line of a per-thread log with a timestamp column (<timestamp> <process> inv ...), not of a history: pmlin merge LOG... -o FILE"},
		{"nanosecond timestamp", "1700000000123456789 1 inv read 10\n", 1, 1, "per-thread log with a timestamp column"},
		{"timestamp on a ret", "1 inv read 3\n99 1 ret 0\n", 2, 1, "(<timestamp> <process> ret ...)"},
		{"0 crash", "1 inv read 1\n0 crash\n", 2, 1, `a crash line is just "crash", without a process id; "0 crash" looks like a line of a per-thread log (<timestamp> crash): pmlin merge`},
		{"log header", "pmlin-log v1\n10 1 inv read 1\n", 1, 1, "this is a log for pmlin merge (pmlin-log), not a history"},
		{"JSON type", `{"p":1,"inv":5,"addrs":[1]}` + "\n", 1, 0, `"inv" is a number, expected a string naming the operation`},
		{"JSON addrs type", `{"p":1,"inv":"read","addrs":7}` + "\n", 1, 0, `"addrs" is a number, expected an array of addresses`},
		{"JSON unknown key", `{"p":1,"inv":"read","addrs":[1],"thread":2}` + "\n", 1, 0, `unknown key "thread" (a line's keys are header, init, p, inv, addrs, words, ret, addr`},
		{"JSON syntax", `{"p":1,"inv":"read" "addrs":[1]}` + "\n", 1, 21, `not valid JSON: unexpected '"'`},
		{"JSON bad string", `{"p":1,"inv":"cas","words":[[1,"\x",5]]}` + "\n", 1, 34, `not valid JSON: unexpected 'x'`},
		{"JSON init", `{"init":{"1":2,}}` + "\n", 1, 16, `not valid JSON: unexpected '}'`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadAll(strings.NewReader(tc.in), "h")
			var he *Error
			if !errors.As(err, &he) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("%v: not a syntax error", err)
			}
			if he.Line != tc.line || he.Column != tc.col || !strings.Contains(he.Msg, tc.want) {
				t.Fatalf("got %d:%d: %s\nwant %d:%d: ...%s...", he.Line, he.Column, he.Msg, tc.line, tc.col, tc.want)
			}
			for _, leak := range []string{"json:", "Go ", "jsonLine", "unmarshal", "struct"} {
				if strings.Contains(he.Msg, leak) {
					t.Fatalf("the message leaks encoding/json's words (%q): %s", leak, he.Msg)
				}
			}
		})
	}
}

// TestHintsLeaveGoodInputAlone: what looks like a mistake in one place is
// fine in another (a value with the digits of a timestamp, a history
// starting with "BZ" in a comment).
func TestHintsLeaveGoodInputAlone(t *testing.T) {
	for _, in := range []string{
		"# BZh9 is not a magic here\n1 inv read 1700000000123\n1 ret 0\n",
		"1 inv cas 1:0:1042\n1 ret ok\n",
		"\n\n1 inv read 1\n1 ret 0\ncrash\n",
		// A character cut by the end of the bytes sniffed (512) is text.
		"# x" + strings.Repeat("é", 300) + "\n1 inv read 1\n1 ret 0\n",
		// A comment with a few control characters is still a history.
		"# \x1b[1mbold\x1b[0m and a tab\t\n1 inv read 1\n1 ret 0\n",
	} {
		if _, err := ReadAll(strings.NewReader(in), "h"); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func TestLooksConcatenated(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"1 inv read 1\n1 ret 0\n1 inv read 1\n1 ret 0\n2 inv read 1\n2 ret 0\n", true},
		{"1 inv read 1\n2 inv read 1\n1 ret 0\n2 ret 0\n", false},
		{"1 inv read 1\n1 ret 0\n2 inv read 1\n2 ret 0\n1 inv read 1\n1 ret 0\n", false},
		// Per segment: after a crash, each process may have a block again.
		{"1 inv read 1\n1 ret 0\n2 inv read 1\n2 ret 0\ncrash\n2 inv read 1\n2 ret 0\n1 inv read 1\n1 ret 0\n", true},
		{"1 inv read 1\n1 ret 0\n1 inv read 1\n1 ret 0\n", false}, // one process
	} {
		got, err := LooksConcatenated(NewReader(strings.NewReader(tc.in), "h", Options{}))
		if err != nil || got != tc.want {
			t.Errorf("%q: %v %v, want %v", tc.in, got, err, tc.want)
		}
	}
}

// TestBinaryInputIsNotAHistory: a file that is no text (random bytes, an
// executable, an image, UTF-16) is told as such, on line 0 (no line to
// blame), in a short message that quotes none of its bytes, whatever its
// size.
func TestBinaryInputIsNotAHistory(t *testing.T) {
	type input struct {
		name string
		open func() io.Reader
		want string
	}
	var ins []input
	for _, size := range []int{16, 100, 511, 512, 4096, 1 << 20} {
		for seed := range uint64(5) {
			rng := rand.New(rand.NewPCG(seed, uint64(size)))
			b := make([]byte, size)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			ins = append(ins, input{fmt.Sprintf("random %d bytes, seed %d", size, seed),
				func() io.Reader { return bytes.NewReader(b) }, "this is binary data, not a pmlin history (byte 0x"})
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ins = append(ins, input{"this test's executable", func() io.Reader {
		f, err := os.Open(exe)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}, "this is an ELF executable or library, not a pmlin history"})
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	var pngb, jpgb, gifb bytes.Buffer
	png.Encode(&pngb, img)
	jpeg.Encode(&jpgb, img, nil)
	gif.Encode(&gifb, img, nil)
	for _, x := range []struct {
		name string
		b    []byte
		want string
	}{
		{"PNG", pngb.Bytes(), "this is a PNG image, not a pmlin history"},
		{"JPEG", jpgb.Bytes(), "this is a JPEG image, not a pmlin history"},
		{"GIF", gifb.Bytes(), "this is a GIF image, not a pmlin history"},
		{"UTF-16 without BOM", utf16le("1 inv read 1\n1 ret 0\n"), "this is binary data, not a pmlin history (byte 0x00 at offset 1 is not text"},
	} {
		ins = append(ins, input{x.name, func() io.Reader { return bytes.NewReader(x.b) }, x.want})
	}
	for _, in := range ins {
		_, err := ReadAll(in.open(), "f.bin")
		var he *Error
		if !errors.As(err, &he) || !errors.Is(err, ErrMalformed) {
			t.Fatalf("%s: %v: not a malformed-input error", in.name, err)
		}
		if he.Line != 0 || he.File != "f.bin" || !strings.HasPrefix(he.Msg, in.want) || !strings.HasPrefix(err.Error(), "f.bin: this is ") {
			t.Errorf("%s: %q (line %d), want line 0 and %q", in.name, err, he.Line, in.want)
		}
		if len(he.Msg) > 200 || !utf8.ValidString(he.Msg) || strings.ContainsFunc(he.Msg, unicode.IsControl) {
			t.Errorf("%s: the message quotes the input: %q", in.name, he.Msg)
		}
	}
	// UTF-16 with its byte order mark says how to convert it.
	_, err = ReadAll(bytes.NewReader(append([]byte{0xff, 0xfe}, utf16le("1 inv read 1\n")...)), "f.txt")
	if err == nil || !strings.Contains(err.Error(), "UTF-16 text (little-endian, with a byte order mark), not a pmlin history: convert it to UTF-8 first: iconv") {
		t.Errorf("UTF-16 with BOM: %v", err)
	}
}

func utf16le(s string) []byte {
	var b []byte
	for _, r := range s {
		b = append(b, byte(r), byte(r>>8))
	}
	return b
}
