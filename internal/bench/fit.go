package bench

import "math"

// Fit is a least-squares line y = Slope*x + Intercept, with R², the
// fraction of the variance of y it explains.
type Fit struct {
	Slope     float64 `json:"slope"`
	Intercept float64 `json:"intercept"`
	R2        float64 `json:"r2"`
}

// linearFit fits a line to the points (x[i], y[i]).
func linearFit(x, y []float64) Fit {
	n := float64(len(x))
	if len(x) < 2 {
		return Fit{}
	}
	var sx, sy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
	}
	mx, my := sx/n, sy/n
	var sxx, sxy, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxx += dx * dx
		sxy += dx * dy
		syy += dy * dy
	}
	if sxx == 0 {
		return Fit{Intercept: my}
	}
	f := Fit{Slope: sxy / sxx}
	f.Intercept = my - f.Slope*mx
	if syy == 0 {
		f.R2 = 1
	} else {
		var ssr float64
		for i := range x {
			d := y[i] - (f.Slope*x[i] + f.Intercept)
			ssr += d * d
		}
		f.R2 = 1 - ssr/syy
	}
	if math.IsNaN(f.R2) {
		f.R2 = 0
	}
	return f
}
