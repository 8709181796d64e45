package history

// The Reader's own counts, for the external tests.
var (
	ReaderCounts    = (*Reader).counts
	ReaderProcesses = (*Reader).processes
	ReaderLastLine  = (*Reader).lastLine
	ReaderStepsOnly = (*Reader).stepsOnly
)

// RecordingWords are a Recording's words, for the external tests.
func RecordingWords(rc *Recording) []uint64 { return rc.words }
