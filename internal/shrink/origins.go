package shrink

import (
	"bufio"
	"bytes"
	"io"
	"regexp"
	"strconv"
)

// originComment is the comment Write puts after each invocation: the line
// it had in the history it was cut from.
var originComment = regexp.MustCompile(`\S.*#\s*line (\d+)\s*$`)

// maxOrigins bounds the size of a history whose origin comments are read:
// a shrunk history is small.
const maxOrigins = 16 << 20

// Origins reads the line each operation of a history written by Write
// had in the history it was shrunk from (the "# line N" comment at the
// end of its invocation), for reports that name both (analyzer
// Options.Origin). It returns a reader of the same input, whole, and the
// lookup: the original line of a line of this history, 0 when it has
// none. For any other input (no such comment in its first kilobytes, or
// too large for a shrunk history) the lookup is nil and the input is
// streamed as it comes.
func Origins(r io.Reader) (io.Reader, func(line int64) int64) {
	br := bufio.NewReaderSize(r, 8<<10)
	head, _ := br.Peek(8 << 10)
	if !hasOrigins(head) {
		return br, nil
	}
	text, err := io.ReadAll(io.LimitReader(br, maxOrigins))
	if err != nil || len(text) == maxOrigins {
		// Let the reader report the error, or stream what is too large.
		return io.MultiReader(bytes.NewReader(text), br, errReader{err}), nil
	}
	m := map[int64]int64{}
	for n, l := range bytes.Split(text, []byte("\n")) {
		if sm := originComment.FindSubmatch(l); sm != nil {
			if v, err := strconv.ParseInt(string(sm[1]), 10, 64); err == nil {
				m[int64(n+1)] = v
			}
		}
	}
	return bytes.NewReader(text), func(line int64) int64 { return m[line] }
}

// hasOrigins reports whether the beginning of an input has a line with an
// origin comment.
func hasOrigins(head []byte) bool {
	for _, l := range bytes.Split(head, []byte("\n")) {
		if originComment.Match(l) {
			return true
		}
	}
	return false
}

// errReader returns err, or nothing.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}
