package history

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestScanU64MatchesStrconv checks the hand-written number scanner
// against strconv.ParseUint on the edges of the range and on random
// digit strings (seeded, printed on failure), with a trailing byte that
// ends the number.
func TestScanU64MatchesStrconv(t *testing.T) {
	cases := []string{"0", "9", "18446744073709551615", "18446744073709551616", "99999999999999999999",
		"0000000000000000000000018446744073709551615", "1844674407370955161", "9999999999999999999",
		"0xffffffffffffffff", "0x10000000000000000", "0x0000000000000000000ffffffffffffffff", "0XaBcDeF", "0x"}
	const seed = 15
	rng := rand.New(rand.NewPCG(seed, seed))
	for k := 0; k < 20000; k++ {
		var sb strings.Builder
		hex := rng.IntN(2) == 0
		digits := "0123456789"
		if hex {
			sb.WriteString("0x")
			digits = "0123456789abcdefABCDEF"
		}
		for n := rng.IntN(24); n >= 0; n-- {
			sb.WriteByte(digits[rng.IntN(len(digits))])
		}
		cases = append(cases, sb.String())
	}
	for _, c := range cases {
		for _, tail := range []string{"", " ", ":", "g"} {
			b := []byte(c + tail)
			v, j, err := scanU64(b, 0)
			base, body := 10, c
			if strings.HasPrefix(c, "0x") || strings.HasPrefix(c, "0X") {
				base, body = 16, c[2:]
			}
			want, werr := strconv.ParseUint(body, base, 64)
			switch {
			case body == "" && base == 16 && tail == "":
				// "0x" at the end of the input: the decimal 0, ending
				// before the x (followed by anything, it is no number).
				if err != nil || v != 0 || j != 1 {
					t.Fatalf("seed %d: scanU64(%q) = %d, %d, %v; want 0, 1, nil", seed, b, v, j, err)
				}
			case werr != nil:
				if err == nil {
					t.Fatalf("seed %d: scanU64(%q) = %d, want an error (%v)", seed, b, v, werr)
				}
			case err != nil || v != want || j != len(c):
				t.Fatalf("seed %d: scanU64(%q) = %d, %d, %v; want %d, %d", seed, b, v, j, err, want, len(c))
			}
		}
	}
}

// TestScanNumMatchesScanU64: the fast paths' own number scanner
// (scanNum, with its loops for the common lengths) takes the same
// numbers as scanU64, to the same end, and refuses the same tokens, at
// every length around its limits (16 hex, 19 decimal digits), with
// leading zeros, and followed by what ends a token in a line.
func TestScanNumMatchesScanU64(t *testing.T) {
	const seed = 16
	rng := rand.New(rand.NewPCG(seed, seed))
	var cases []string
	for n := 0; n <= 24; n++ {
		for _, prefix := range []string{"", "0x", "0X"} {
			for _, first := range []string{"0", "1", "9", "f", "F"} {
				digits := "0123456789"
				if prefix != "" {
					digits = "0123456789abcdefABCDEF"
				}
				for k := 0; k < 20; k++ {
					var sb strings.Builder
					sb.WriteString(prefix)
					if n > 0 {
						sb.WriteString(first)
					}
					for i := 1; i < n; i++ {
						sb.WriteByte(digits[rng.IntN(len(digits))])
					}
					cases = append(cases, sb.String())
				}
			}
		}
	}
	cases = append(cases, "18446744073709551615", "18446744073709551616", "0xffffffffffffffff", "0x10000000000000000",
		"00000000000000000000001", "0x00000000000000000000001", "x", "", "-1", "0x", "0xg")
	for _, c := range cases {
		for _, tail := range []string{"", " 5", ":7", "\t", "g", "x1", "G0", "/1", "@2", "`3", "\x80f", "\xff0", "\x191234567", "\xc3\xa9aaaaaaaa", "        "} {
			b := []byte(c + tail)
			v, j := scanNum(b, 0)
			ok := j >= 0
			wv, wj, werr := scanU64(b, 0)
			if ok != (werr == nil) || (ok && (v != wv || j != wj)) {
				t.Fatalf("seed %d: scanNum(%q) = %d, end %d; scanU64: %d, %v, end %d", seed, b, v, j, wv, werr, wj)
			}
		}
	}
}

// TestHexEightAtOnce checks scanNum's eight hex digits at once
// against scanU64, which reads one byte at a time: every byte value at
// every position after a run of digits (the ends of the lanes, the bytes
// next to the digit ranges, those over 0x7f whose carries cross lanes),
// followed or not by more digits (up to and past 16), and random words.
func TestHexEightAtOnce(t *testing.T) {
	check := func(word []byte) {
		t.Helper()
		for _, more := range []string{"", "7", "12345678", "123456789"} {
			b := append(append([]byte("0x"), word...), more...)
			v, j := scanNum(b, 0)
			ok := j >= 0
			wv, wj, werr := scanU64(b, 0)
			if ok != (werr == nil) || (ok && (v != wv || j != wj)) {
				t.Fatalf("scanNum(%q) = %#x, end %d; scanU64: %#x, %v, end %d", b, v, j, wv, werr, wj)
			}
		}
	}
	digits := []byte("09afAF5c")
	for pos := 0; pos < 8; pos++ {
		for c := 0; c < 256; c++ {
			b := append([]byte(nil), digits...)
			b[pos] = byte(c)
			check(b)
			for k := pos + 1; k < 8; k++ { // and what follows it, at its worst
				b[k] = 0xff
			}
			check(b)
		}
	}
	const seed = 8
	rng := rand.New(rand.NewPCG(seed, seed))
	alphabet := []byte("0123456789abcdefABCDEFgG:/@` \t\x80\xff")
	b := make([]byte, 8)
	for k := 0; k < 100000; k++ {
		for i := range b {
			if rng.IntN(8) == 0 {
				b[i] = byte(rng.IntN(256))
			} else {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		check(b)
	}
}
