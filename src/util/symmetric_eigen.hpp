#pragma once
// Eigen-decomposition of a small real symmetric matrix in double precision (the
// PCA fit of lightning-pose's unsupervised losses: covariance matrices of at most
// a few hundred dimensions, computed once per run, so accuracy matters and speed
// does not). Cyclic Jacobi rotations: every eigenvector comes out orthonormal to
// machine precision, which LAPACK's eigh also gives, so the two agree up to the
// sign of each vector (and the basis within a repeated eigenvalue).
#include <vector>  // std::vector

namespace trainer {

struct SymmetricEigen {
  int n = 0;
  std::vector<double> values;   // [n], descending
  std::vector<double> vectors;  // [n, n] row-major; row i is the unit eigenvector of values[i]
};

// `matrix` is [n, n] row-major; only its symmetric part is used (the upper
// triangle is mirrored down). Throws SystemError when a value is not finite or the
// rotations do not converge (neither happens for a finite symmetric matrix).
SymmetricEigen symmetric_eigen(const std::vector<double>& matrix, int n);

}  // namespace trainer
