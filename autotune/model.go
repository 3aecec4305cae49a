package autotune

import (
	"math"
	"slices"
)

// Model predicts a candidate's score (higher is faster) from its
// features. It learns online: Update adds measured candidates and refits.
type Model interface {
	Predict(features []float64) float64
	Update(features [][]float64, scores []float64)
}

// RidgeModel is a ridge regression on standardized features, refit on
// every update: small, deterministic, and enough to rank tile sizes once
// a few dozen candidates are measured. Scores are log throughput.
type RidgeModel struct {
	Lambda float64
	xs     [][]float64
	ys     []float64
	mean   []float64
	scale  []float64
	w      []float64
	bias   float64
	// trained is how many records a model read from JSON was fitted on
	// (its xs are not kept).
	trained int
	// prior is the fit a model read from JSON came with, once it learns
	// more: its refits are drawn toward it (see Update).
	prior *ridgePrior
}

// ridgePrior is a fitted state a model keeps learning from: the
// standardization it was fitted in, its weights and bias, and how many
// records of evidence it counts as.
type ridgePrior struct {
	mean, scale, w []float64
	bias, weight   float64
}

// NewRidgeModel returns an empty model (it predicts 0 until updated).
func NewRidgeModel() *RidgeModel { return &RidgeModel{Lambda: 1} }

func (m *RidgeModel) Predict(x []float64) float64 {
	if m.w == nil {
		return 0
	}
	s := m.bias
	for k, v := range x {
		s += m.w[k] * (v - m.mean[k]) / m.scale[k]
	}
	return s
}

// Update adds measured candidates and refits. A model read from JSON (its
// records not kept) learns on from its fit: the refit solves for weights
// near it, in its standardization, as if the fit were min(trained, 64)
// records of evidence, so that a warm start ranks well from the first
// round and yields to the new measurements as they grow.
func (m *RidgeModel) Update(xs [][]float64, ys []float64) {
	if m.prior == nil && m.w != nil && len(m.xs) == 0 {
		m.prior = &ridgePrior{mean: m.mean, scale: m.scale, w: m.w, bias: m.bias, weight: float64(min(max(m.trained, 1), 64))}
	}
	m.xs = append(m.xs, xs...)
	m.ys = append(m.ys, ys...)
	if m.prior != nil {
		m.refitFromPrior()
		return
	}
	n, d := len(m.xs), len(m.xs[0])
	if n < 4 {
		return
	}
	m.mean, m.scale = make([]float64, d), make([]float64, d)
	for k := 0; k < d; k++ {
		for _, x := range m.xs {
			m.mean[k] += x[k]
		}
		m.mean[k] /= float64(n)
		for _, x := range m.xs {
			m.scale[k] += (x[k] - m.mean[k]) * (x[k] - m.mean[k])
		}
		m.scale[k] = math.Sqrt(m.scale[k] / float64(n))
		if m.scale[k] < 1e-9 {
			m.scale[k] = 1
		}
	}
	ymean := 0.0
	for _, y := range m.ys {
		ymean += y
	}
	ymean /= float64(n)
	rows := make([][]float64, n)
	centered := make([]float64, n)
	for i, x := range m.xs {
		r := make([]float64, d+1)
		for k := 0; k < d; k++ {
			r[k] = (x[k] - m.mean[k]) / m.scale[k]
		}
		r[d] = 1
		rows[i], centered[i] = r, m.ys[i]-ymean
	}
	w, ok := ridgeSolve(rows, centered, m.Lambda, nil)
	if !ok {
		return
	}
	m.w = w[:d]
	m.bias = w[d] + ymean
}

// refitFromPrior solves (XᵀX + pI) w = Xᵀy + p w0 over the prior's
// standardized features and a bias column, p the prior's weight and w0
// its weights and bias: ridge regression toward the prior instead of
// toward zero.
func (m *RidgeModel) refitFromPrior() {
	p := m.prior
	d := len(p.w)
	rows := make([][]float64, len(m.xs))
	for i, x := range m.xs {
		r := make([]float64, d+1)
		for k := 0; k < d && k < len(x); k++ {
			r[k] = (x[k] - p.mean[k]) / p.scale[k]
		}
		r[d] = 1
		rows[i] = r
	}
	w, ok := ridgeSolve(rows, m.ys, p.weight, append(slices.Clone(p.w), p.bias))
	if !ok {
		return
	}
	m.mean, m.scale = p.mean, p.scale
	m.w, m.bias = w[:d], w[d]
}

// ridgeSolve returns the w minimizing |Xw - y|² + λ|w - w0|² (w0 nil:
// zero), X's rows given: the solution of (XᵀX + λI) w = Xᵀy + λw0, by a
// Cholesky factorization of the left side (symmetric, and positive
// definite for λ > 0). It reports false when the factorization fails
// (λ = 0 with dependent columns, or values that are not finite).
//
// Forty-odd unknowns, solved once a round: a few lines here rather than a
// linear algebra library (gonum's 16 packages were loom's only use of it).
func ridgeSolve(rows [][]float64, y []float64, lambda float64, w0 []float64) ([]float64, bool) {
	if len(rows) == 0 {
		return nil, false
	}
	m := len(rows[0])
	a := make([][]float64, m)
	b := make([]float64, m)
	for k := range a {
		a[k] = make([]float64, m)
		a[k][k] = lambda
		if w0 != nil {
			b[k] = lambda * w0[k]
		}
	}
	for i, r := range rows {
		for k, rk := range r {
			if rk == 0 {
				continue
			}
			b[k] += rk * y[i]
			for l := 0; l <= k; l++ {
				a[k][l] += rk * r[l]
			}
		}
	}
	// a = L Lᵀ, L in a's lower triangle.
	for k := 0; k < m; k++ {
		for l := 0; l <= k; l++ {
			s := a[k][l]
			for j := 0; j < l; j++ {
				s -= a[k][j] * a[l][j]
			}
			if l == k {
				if !(s > 0) || math.IsInf(s, 0) {
					return nil, false
				}
				a[k][k] = math.Sqrt(s)
			} else {
				a[k][l] = s / a[l][l]
			}
		}
	}
	// L z = b, then Lᵀ w = z.
	z := make([]float64, m)
	for k := 0; k < m; k++ {
		s := b[k]
		for j := 0; j < k; j++ {
			s -= a[k][j] * z[j]
		}
		z[k] = s / a[k][k]
	}
	w := make([]float64, m)
	for k := m - 1; k >= 0; k-- {
		s := z[k]
		for j := k + 1; j < m; j++ {
			s -= a[j][k] * w[j]
		}
		w[k] = s / a[k][k]
	}
	return w, true
}

// trainedOn is how many records the model's fit stands for.
func (m *RidgeModel) trainedOn() int {
	if m.prior != nil {
		return m.trained + len(m.xs)
	}
	return max(len(m.xs), m.trained)
}
