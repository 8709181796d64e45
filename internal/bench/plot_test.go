package bench

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func labels(ts []plot.Tick) []string {
	var ls []string
	for _, t := range ts {
		if t.Label != "" {
			ls = append(ls, t.Label)
		}
	}
	return ls
}

func TestIntTicksWholeNumbersOnly(t *testing.T) {
	for _, r := range [][2]float64{{1, 8}, {1, 2}, {0.5, 2.5}, {1, 64}, {0, 1000}} {
		ts := intTicks{}.Ticks(r[0], r[1])
		if len(ts) < 2 {
			t.Errorf("%v: %d ticks, want at least 2", r, len(ts))
		}
		for _, tk := range ts {
			if tk.Value != math.Trunc(tk.Value) || tk.Value < r[0] || tk.Value > r[1] || tk.Label == "" {
				t.Errorf("%v: tick %v %q: want a labelled whole number in range", r, tk.Value, tk.Label)
			}
		}
	}
	if got := labels(intTicks{}.Ticks(1, 8)); !slices.Equal(got, []string{"1", "2", "3", "4", "5", "6", "7", "8"}) {
		t.Errorf("[1, 8]: labels %q", got)
	}
	if got := labels(intTicks{}.Ticks(1, 2)); !slices.Equal(got, []string{"1", "2"}) {
		t.Errorf("[1, 2]: labels %q", got)
	}
}

func TestLogTicksLabelEveryDecade(t *testing.T) {
	ts := logTicks{}.Ticks(0.01, 1000)
	if got, want := labels(ts), []string{"0.01", "0.1", "1", "10", "100", "1000"}; !slices.Equal(got, want) {
		t.Errorf("[0.01, 1000]: labels %q, want %q", got, want)
	}
	if len(ts) != 5*9+1 {
		t.Errorf("[0.01, 1000]: %d ticks, want 46 (the minor ones unlabelled)", len(ts))
	}
	// Less than a decade either side of 100: gonum's LogTicks labels 100 alone.
	if got, want := labels(logTicks{}.Ticks(30, 900)), []string{"50", "100", "200", "500"}; !slices.Equal(got, want) {
		t.Errorf("[30, 900]: labels %q, want %q", got, want)
	}
	if got := labels(logTicks{}.Ticks(0.31, 0.45)); !slices.Equal(got, []string{"0.4"}) {
		// one tick in range at all: it is labelled
		t.Errorf("[0.31, 0.45]: labels %q", got)
	}
	if got := labels(logTicks{}.Ticks(0.3, 0.9)); len(got) < 2 {
		t.Errorf("[0.3, 0.9]: labels %q, want at least two", got)
	}
}

// TestLegendOffTheData draws a plot whose points fill every corner of the
// data area (the legend used to sit in the top left one) and checks that
// the legend's box holds no point; it also saves it as a PNG with room for
// the legend below.
func TestLegendOffTheData(t *testing.T) {
	p := newPlot("t", "threads", "M operations/s", false, true)
	countAxis(&p.X)
	xs := []float64{1, 1, 2, 4, 8, 8}
	for i, s := range []series{
		{name: "a", xs: xs, ys: []float64{1000, 0.01, 5, 50, 0.01, 1000}, style: 0},
		{name: "b, a longer name", xs: xs, ys: []float64{900, 0.02, 6, 60, 0.02, 900}, style: 1},
		{name: "c", xs: xs, ys: []float64{800, 0.03, 7, 70, 0.03, 800}, style: 2},
	} {
		s.style = i
		if err := add(p, s); err != nil {
			t.Fatal(err)
		}
	}
	band := legendBand(p)
	if band <= 0 {
		t.Fatal("no band for a legend with three entries")
	}
	img := vgimg.New(plotW, plotH+band)
	leg, data := drawPlot(p, draw.New(img), band)
	if leg.Size().X <= 0 || leg.Size().Y <= 0 {
		t.Fatalf("legend box %v is empty", leg)
	}
	if leg.Max.Y > data.Min.Y {
		t.Errorf("legend box %v reaches into the data area %v", leg, data.Rectangle)
	}
	glyph := vg.Points(5)
	for _, s := range [][]float64{{1000, 0.01, 5, 50, 0.01, 1000}, {900, 0.02, 6, 60, 0.02, 900}} {
		for i, y := range s {
			pt := vg.Point{X: data.X(p.X.Norm(xs[i])), Y: data.Y(p.Y.Norm(y))}
			if pt.X+glyph >= leg.Min.X && pt.X-glyph <= leg.Max.X && pt.Y+glyph >= leg.Min.Y && pt.Y-glyph <= leg.Max.Y {
				t.Errorf("point (%v, %v) at %v is under the legend %v", xs[i], y, pt, leg)
			}
		}
	}

	dir := t.TempDir()
	if _, err := savePlot(p, dir, "t.png"); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "t.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Width <= 0 || float64(cfg.Height)/float64(cfg.Width) <= float64(plotH/plotW) {
		t.Errorf("PNG %dx%d: no room was added below for the legend", cfg.Width, cfg.Height)
	}
}
