// Cyclic Jacobi eigenvalue algorithm (Golub & Van Loan, Matrix Computations,
// section 8.5), with Rutishauser's stable rotation formulas: each sweep zeroes every
// off-diagonal pair once; convergence is quadratic, a handful of sweeps for the
// sizes here.
#include "util/symmetric_eigen.hpp"

#include <algorithm>  // std::stable_sort
#include <cmath>      // std::fabs, std::sqrt, std::isfinite
#include <numeric>    // std::iota

#include "util/error.hpp"  // TRAINER_ASSERT

namespace trainer {

SymmetricEigen symmetric_eigen(const std::vector<double>& matrix, int n) {
  TRAINER_ASSERT(n >= 0 && matrix.size() == std::size_t(n) * std::size_t(n),
                 "symmetric_eigen: " << matrix.size() << " values for n = " << n);
  const std::size_t N = std::size_t(n);
  std::vector<double> a(N * N), v(N * N, 0.0);
  for (std::size_t i = 0; i < N; ++i) {
    v[i * N + i] = 1.0;
    for (std::size_t j = 0; j < N; ++j) {
      const double x = j >= i ? matrix[i * N + j] : matrix[j * N + i];
      TRAINER_ASSERT(std::isfinite(x), "symmetric_eigen: non-finite entry (" << i << ", " << j << ")");
      a[i * N + j] = x;
    }
  }
  auto off_norm = [&] {
    double s = 0.0;
    for (std::size_t i = 0; i < N; ++i)
      for (std::size_t j = i + 1; j < N; ++j) s += a[i * N + j] * a[i * N + j];
    return s;
  };
  double scale = 0.0;
  for (double x : a) scale += x * x;
  // Done when the off-diagonal mass is at rounding level of the whole matrix
  // (relative Frobenius norm 1e-15), or when a sweep finds nothing to rotate.
  const double converged = scale * 1e-30;
  constexpr int kMaxSweeps = 100;
  for (int sweep = 0; sweep < kMaxSweeps && off_norm() > converged; ++sweep) {
    bool rotated = false;
    for (std::size_t p = 0; p < N; ++p)
      for (std::size_t q = p + 1; q < N; ++q) {
        const double apq = a[p * N + q];
        if (apq == 0.0) continue;
        const double app = a[p * N + p], aqq = a[q * N + q];
        // An entry below the diagonal's rounding is zero already (Numerical
        // Recipes' rule); rotating it would only stir rounding noise.
        const double g = 100.0 * std::fabs(apq);
        if (sweep > 3 && std::fabs(app) + g == std::fabs(app) && std::fabs(aqq) + g == std::fabs(aqq)) {
          a[p * N + q] = a[q * N + p] = 0.0;
          continue;
        }
        rotated = true;
        // The rotation angle that zeroes a[p][q]: t = tan(theta), the smaller root.
        const double theta = (aqq - app) / (2.0 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1.0));
        const double c = 1.0 / std::sqrt(t * t + 1.0), s = t * c;
        // A <- J^T A J, applied to rows and columns p and q.
        for (std::size_t k = 0; k < N; ++k) {
          const double akp = a[k * N + p], akq = a[k * N + q];
          a[k * N + p] = c * akp - s * akq;
          a[k * N + q] = s * akp + c * akq;
        }
        for (std::size_t k = 0; k < N; ++k) {
          const double apk = a[p * N + k], aqk = a[q * N + k];
          a[p * N + k] = c * apk - s * aqk;
          a[q * N + k] = s * apk + c * aqk;
        }
        a[p * N + q] = a[q * N + p] = 0.0;
        // V <- V J: the columns of V are the eigenvectors.
        for (std::size_t k = 0; k < N; ++k) {
          const double vkp = v[k * N + p], vkq = v[k * N + q];
          v[k * N + p] = c * vkp - s * vkq;
          v[k * N + q] = s * vkp + c * vkq;
        }
      }
    if (!rotated) break;
  }
  // Jacobi converges quadratically; anything far from rounding level is a bug.
  TRAINER_ASSERT(off_norm() <= scale * 1e-20,
                 "symmetric_eigen: no convergence after " << kMaxSweeps << " sweeps (n = " << n << ")");

  std::vector<int> order(N);
  std::iota(order.begin(), order.end(), 0);
  // Descending; a stable sort keeps equal eigenvalues in a fixed order.
  std::stable_sort(order.begin(), order.end(),
                   [&](int x, int y) { return a[std::size_t(x) * N + x] > a[std::size_t(y) * N + y]; });
  SymmetricEigen out;
  out.n = n;
  out.values.resize(N);
  out.vectors.resize(N * N);
  for (std::size_t i = 0; i < N; ++i) {
    const std::size_t col = std::size_t(order[i]);
    out.values[i] = a[col * N + col];
    for (std::size_t k = 0; k < N; ++k) out.vectors[i * N + k] = v[k * N + col];
  }
  return out;
}

}  // namespace trainer
