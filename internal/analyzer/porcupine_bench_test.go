package analyzer_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/porcmodel"
)

// BenchmarkVersusPorcupine checks the same generated linearizable history
// (100k operations, 8 processes) with pmlin and with Porcupine, each end
// to end from the file. Porcupine gets the word-array model partitioned by
// address components (the partitions P-compositionality allows) and a
// timeout; a timeout is reported as such. Memory: run each sub-benchmark
// alone under /usr/bin/time -v for the peak.
//
//	go test -run '^$' -bench VersusPorcupine -benchtime 1x ./analyzer/
func BenchmarkVersusPorcupine(b *testing.B) {
	path := benchHistory(b, 100_000, 8)
	b.Run("tool=pmlin", func(b *testing.B) {
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			res, err := analyzer.Check(context.Background(), history.NewReader(f, path, history.Options{}), analyzer.Options{})
			f.Close()
			if err != nil || !res.Linearizable {
				b.Fatal(err)
			}
		}
	})
	b.Run("tool=porcupine", func(b *testing.B) {
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			h, err := history.ReadAll(f, path)
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
			ops, _ := porcmodel.Operations(h, history.Strict)
			res, _ := porcupine.CheckOperationsVerbose(porcmodel.Model(h.InitValue), ops, 10*time.Minute)
			switch res {
			case porcupine.Unknown:
				b.Log("porcupine timed out")
			case porcupine.Illegal:
				b.Fatal("porcupine says not linearizable")
			}
		}
	})
}
