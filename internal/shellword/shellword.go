// Package shellword splits a command line into words and joins words into
// a command line, as sh quotes them, expanding nothing: the one home of
// the quoting of the commands pmlin prints (replay commands, scripts) and
// of the program named by pmlin fuzz --exec.
package shellword

import (
	"fmt"
	"strings"
)

// Split splits a command line into words as sh does, without expanding
// anything (no variables, globs or ~): blanks (spaces, tabs) separate
// words; 'single quotes' keep everything up to the next single
// quote; "double quotes" keep everything but the backslash of \" \\ \$
// \` (a backslash-newline is removed); a backslash outside quotes keeps
// the next character (a backslash-newline is removed). What sh would take
// for more than one simple command is refused: a newline, ; & | < > ( )
// or a backquote outside quotes, and $( in any.
func Split(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\n', ';', '&', '|', '<', '>', '(', ')', '`':
			return nil, fmt.Errorf("command %q: %q outside quotes: one program and its arguments, no shell syntax (quote it, or run sh -c '...')", s, c)
		case ' ', '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case '\\':
			if i+1 == len(s) {
				return nil, fmt.Errorf("command %q ends with a backslash", s)
			}
			i++
			if s[i] != '\n' {
				w.WriteByte(s[i])
				inWord = true
			}
		case '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("command %q: a single quote is not closed", s)
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case '"':
			inWord = true
			closed := false
			for i++; i < len(s); i++ {
				if s[i] == '"' {
					closed = true
					break
				}
				if s[i] == '`' || strings.HasPrefix(s[i:], "$(") {
					return nil, fmt.Errorf("command %q: a command substitution: no shell syntax (run sh -c '...')", s)
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
					if s[i] == '\n' {
						continue
					}
				}
				w.WriteByte(s[i])
			}
			if !closed {
				return nil, fmt.Errorf("command %q: a double quote is not closed", s)
			}
		default:
			inWord = true
			w.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// Join renders words as one sh command line, quoting (in single quotes)
// only the words that need it; Split splits it back into the same words.
func Join(words []string) string {
	out := make([]string, len(words))
	for i, a := range words {
		out[i] = a
		if a == "" || strings.ContainsFunc(a, func(r rune) bool { return !strings.ContainsRune(safe, r) }) {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

// safe are the characters that need no quoting in sh.
const safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=.,:/@%"
