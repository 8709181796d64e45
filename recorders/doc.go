// Package recorders holds no Go code to import: it is the home of the
// recorders for other languages (c/pmlin.h for C and C++,
// python/pmlin_recorder.py) and of the tests that hold them to the history
// format and to the merge rules. Those tests build the C example, the C++
// check and the scripted drivers with gcc and g++, run the Python example
// and driver with python3, and check every history they write with the
// analyzer: the correct MwCAS must be linearizable, the one with the planted
// bug must not. Without gcc, g++ or python3 the tests skip, unless the
// environment variable CI is set (as .ci/run does): then they fail.
//
// crash_test.go kills C and Python programs that record into log files
// (the logs that survive a kill), restarts them, and gathers the logs with
// package internal/merge (pmlin gather): every history must be well formed
// and linearizable for a correct program, and a record torn by a kill must
// be cut, never read as data. exec_test.go crash-fuzzes the persistent
// MwCAS examples with pmlin fuzz --exec (package cli, in process) and runs
// the README's guide "Crash-testing your C/C++ program" as it stands.
//
// The duties of a recorder, the APIs, the log syntax of `pmlin merge`, and
// the log files of `pmlin gather` are in recorders/README.md.
package recorders
