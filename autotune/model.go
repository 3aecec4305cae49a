package autotune

import (
	"math"

	"gonum.org/v1/gonum/mat"
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
	X := mat.NewDense(n, d+1, nil)
	Y := mat.NewVecDense(n, nil)
	for i, x := range m.xs {
		for k := 0; k < d; k++ {
			X.Set(i, k, (x[k]-m.mean[k])/m.scale[k])
		}
		X.Set(i, d, 1)
		Y.SetVec(i, m.ys[i]-ymean)
	}
	// (XᵀX + λI) w = Xᵀy
	var xtx mat.Dense
	xtx.Mul(X.T(), X)
	for k := 0; k < d+1; k++ {
		xtx.Set(k, k, xtx.At(k, k)+m.Lambda)
	}
	var xty mat.VecDense
	xty.MulVec(X.T(), Y)
	var w mat.VecDense
	if err := w.SolveVec(&xtx, &xty); err != nil {
		return
	}
	m.w = make([]float64, d)
	for k := 0; k < d; k++ {
		m.w[k] = w.AtVec(k)
	}
	m.bias = w.AtVec(d) + ymean
}

// refitFromPrior solves (XᵀX + pI) w = Xᵀy + p w0 over the prior's
// standardized features and a bias column, p the prior's weight and w0
// its weights and bias: ridge regression toward the prior instead of
// toward zero.
func (m *RidgeModel) refitFromPrior() {
	p := m.prior
	n, d := len(m.xs), len(p.w)
	X := mat.NewDense(n, d+1, nil)
	Y := mat.NewVecDense(n, m.ys)
	for i, x := range m.xs {
		for k := 0; k < d && k < len(x); k++ {
			X.Set(i, k, (x[k]-p.mean[k])/p.scale[k])
		}
		X.Set(i, d, 1)
	}
	var xtx mat.Dense
	xtx.Mul(X.T(), X)
	for k := 0; k < d+1; k++ {
		xtx.Set(k, k, xtx.At(k, k)+p.weight)
	}
	w0 := mat.NewVecDense(d+1, append(append([]float64(nil), p.w...), p.bias))
	var rhs mat.VecDense
	rhs.MulVec(X.T(), Y)
	rhs.AddScaledVec(&rhs, p.weight, w0)
	var w mat.VecDense
	if err := w.SolveVec(&xtx, &rhs); err != nil {
		return
	}
	m.mean, m.scale = p.mean, p.scale
	m.w = make([]float64, d)
	for k := 0; k < d; k++ {
		m.w[k] = w.AtVec(k)
	}
	m.bias = w.AtVec(d)
}

// trainedOn is how many records the model's fit stands for.
func (m *RidgeModel) trainedOn() int {
	if m.prior != nil {
		return m.trained + len(m.xs)
	}
	return max(len(m.xs), m.trained)
}
