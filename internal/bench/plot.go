package bench

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The size of one plot (and of one panel of a grid).
const (
	plotW = 16 * vg.Centimeter
	plotH = 10 * vg.Centimeter
)

// series is one line or scatter of a plot.
type series struct {
	name   string
	xs, ys []float64
	style  int  // colour and glyph index (plotutil's palettes)
	dashed bool // a fitted line, not measurements
	dashes bool // measurements joined by a dashed line
	noLine bool // points only
	glyph  draw.GlyphDrawer
	color  color.Color
}

func newPlot(title, xLabel, yLabel string, logX, logY bool) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = 2 * vg.Millimeter // the highest point's glyph stays off the title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
	}
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
	}
	p.Add(plotter.NewGrid())
	return p
}

// countAxis marks a as an axis of counts (threads, processes): a tick
// between two whole numbers (1.5 threads) would name a run that cannot exist.
func countAxis(a *plot.Axis) { a.Tick.Marker = intTicks{} }

// intTicks is a plot.Ticker that yields whole numbers only: every integer
// in range when there are few, else multiples of a 1-2-5 step.
type intTicks struct{}

func (intTicks) Ticks(lo, hi float64) []plot.Tick {
	first, last := math.Ceil(lo), math.Floor(hi)
	if last < first {
		return nil
	}
	step := 1.0
	for mult := 0; (last-first)/step > 8; mult++ {
		step = []float64{2, 5, 10}[mult%3] * math.Pow10(mult/3)
	}
	var ts []plot.Tick
	for v := math.Ceil(first/step) * step; v <= last; v += step {
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
	}
	return ts
}

// logTicks is a plot.Ticker for log axes that labels every power of ten in
// range, with unlabelled ticks at 2..9 times each. gonum's LogTicks does the
// same, but an axis spanning less than a decade then shows one label (or
// none) and cannot be read; there the 2x and 5x ticks are labelled too, and
// if that still gives fewer than two labels, all of them.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi < lo {
		return nil
	}
	in := func(v float64) bool { return v >= lo*(1-1e-9) && v <= hi*(1+1e-9) }
	var ts []plot.Tick
	for e := int(math.Floor(math.Log10(lo))); e <= int(math.Ceil(math.Log10(hi))); e++ {
		for m := 1; m <= 9; m++ {
			// Parsed rather than multiplied so that 3e-2 is the float
			// nearest 0.03 and its label reads "0.03".
			v, _ := strconv.ParseFloat(fmt.Sprintf("%de%d", m, e), 64)
			if in(v) {
				ts = append(ts, plot.Tick{Value: v})
			}
		}
	}
	for _, label := range []func(m float64) bool{
		func(m float64) bool { return m == 1 },
		func(m float64) bool { return m == 1 || m == 2 || m == 5 },
		func(float64) bool { return true },
	} {
		n := 0
		for i := range ts {
			if label(mantissa(ts[i].Value)) {
				ts[i].Label = strconv.FormatFloat(ts[i].Value, 'g', -1, 64)
				n++
			}
		}
		if n >= 2 || n == len(ts) {
			break
		}
	}
	return ts
}

// mantissa returns m of v = m * 10^e, 1 <= m < 10, rounded to a whole number
// (v is one of logTicks' values).
func mantissa(v float64) float64 {
	return math.Round(v / math.Pow10(int(math.Floor(math.Log10(v)+1e-9))))
}

// add draws s on p; points with a coordinate that a log axis cannot show
// (zero or negative) are left out.
func add(p *plot.Plot, s series) error {
	_, logX := p.X.Scale.(plot.LogScale)
	_, logY := p.Y.Scale.(plot.LogScale)
	var xys plotter.XYs
	for i := range s.xs {
		if (logX && s.xs[i] <= 0) || (logY && s.ys[i] <= 0) {
			continue
		}
		xys = append(xys, plotter.XY{X: s.xs[i], Y: s.ys[i]})
	}
	if len(xys) == 0 {
		return nil
	}
	c := s.color
	if c == nil {
		c = plotutil.Color(s.style)
	}
	if s.dashed {
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color = c
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(s.name, l)
		return nil
	}
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return err
	}
	sc.Color = c
	sc.Shape = plotutil.Shape(s.style)
	if s.glyph != nil {
		sc.Shape = s.glyph
	}
	sc.Radius = vg.Points(3)
	if s.noLine {
		sc.Radius = vg.Points(5)
		p.Add(sc)
		p.Legend.Add(s.name, sc)
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color = c
	if s.dashes {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	p.Add(l, sc)
	p.Legend.Add(s.name, l, sc)
	return nil
}

// savePlot writes p as dir/name (PNG) and returns name.
func savePlot(p *plot.Plot, dir, name string) (string, error) {
	band := legendBand(p)
	img := vgimg.New(plotW, plotH+band)
	drawPlot(p, draw.New(img), band)
	return name, writePNG(img, filepath.Join(dir, name))
}

// legendBand is the height below the plot that p's legend needs (zero if it
// has no entries).
func legendBand(p *plot.Plot) vg.Length {
	h := p.Legend.Rectangle(draw.Canvas{}).Size().Y
	if h <= 0 {
		return 0
	}
	return h + p.Legend.TextStyle.FontExtents().Descent + 3*vg.Millimeter
}

// drawPlot draws p on c with its legend in a band of height band along the
// bottom of c, below the x axis, left-aligned with the data area, so that the
// legend never covers a point whatever the data. It returns the legend's box
// and the data area.
func drawPlot(p *plot.Plot, c draw.Canvas, band vg.Length) (legend vg.Rectangle, data draw.Canvas) {
	leg := p.Legend
	p.Legend = plot.NewLegend() // plot.Draw would draw leg inside the data area
	defer func() { p.Legend = leg }()
	// The margin keeps the rightmost point's glyph inside the image.
	plotC := draw.Crop(c, 0, -2*vg.Millimeter, band, -2*vg.Millimeter)
	p.Draw(plotC)
	data = p.DataCanvas(plotC)
	if band == 0 {
		return vg.Rectangle{}, data
	}
	legC := c
	legC.Max.Y = plotC.Min.Y
	leg.Top, leg.Left = true, true
	leg.XOffs = data.Min.X - legC.Min.X
	leg.Draw(legC)
	r := leg.Rectangle(draw.Canvas{})
	return vg.Rectangle{
		Min: vg.Point{X: legC.Min.X + leg.XOffs, Y: legC.Max.Y - r.Size().Y - leg.TextStyle.FontExtents().Descent},
		Max: vg.Point{X: legC.Min.X + leg.XOffs + r.Size().X, Y: legC.Max.Y},
	}, data
}

// saveGrid draws plots as a grid of panels (rows of columns) into one PNG.
// Every panel keeps the same band for its legend (the largest) so that the
// data areas stay aligned.
func saveGrid(plots [][]*plot.Plot, dir, name string) (string, error) {
	rows, cols := len(plots), len(plots[0])
	var band vg.Length
	for _, row := range plots {
		for _, p := range row {
			if p != nil {
				band = max(band, legendBand(p))
			}
		}
	}
	panelW, panelH := plotW*0.75, plotH*0.9+band
	img := vgimg.New(panelW*vg.Length(cols), panelH*vg.Length(rows))
	dc := draw.New(img)
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	// Align lays the panels out by their axes; the legend band is then
	// taken from the bottom of each tile, the same for all.
	canvases := plot.Align(plots, t, dc)
	for i := range plots {
		for j := range plots[i] {
			if plots[i][j] != nil {
				drawPlot(plots[i][j], canvases[i][j], band)
			}
		}
	}
	return name, writePNG(img, filepath.Join(dir, name))
}

func writePNG(img *vgimg.Canvas, path string) error {
	return writeFile(path, func(w io.Writer) error {
		_, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w)
		return err
	})
}

// Glyphs for the points that are not measurements.
var (
	timeoutGlyph = draw.CrossGlyph{}
	oomGlyph     = draw.PyramidGlyph{}
	red          = color.RGBA{R: 200, A: 255}
)
