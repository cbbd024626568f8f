// The fit of lightning-pose's KeypointPCA (lightning_pose/utils/pca.py), step by
// step as there: format the labels into the PCA data matrix, check rows >= columns,
// NaNPCA._fit_full (nanmean, np.ma.cov, eigh, clipping, svd_flip), ComponentChooser,
// and EmpiricalEpsilon over the training rows' reprojection errors.
#include "train/keypoint_pca.hpp"

#include <algorithm>  // std::sort, std::min
#include <cmath>      // std::isnan, std::isfinite, std::sqrt, std::floor, std::fabs
#include <limits>     // quiet_NaN
#include <sstream>    // std::ostringstream
#include <variant>    // std::get_if, std::visit

#include "util/error.hpp"            // UserError, TRAINER_ASSERT
#include "util/symmetric_eigen.hpp"  // symmetric_eigen

namespace trainer::train {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string mode_name(PcaMode m) { return m == PcaMode::singleview ? "pca_singleview" : "pca_multiview"; }

void check_index(int index, int num_keypoints, const char* key) {
  if (index < 0 || index >= num_keypoints)
    throw UserError(std::string(key) + " has keypoint index " + std::to_string(index) +
                        ", outside 0.." + std::to_string(num_keypoints - 1),
                    "indices count from 0 in the order of the label file's keypoints");
}

// np.nanpercentile(values, percentile) with numpy's default 'linear' method,
// including numpy's two-sided lerp; `values` holds no NaN. NaN when empty.
double percentile_linear(std::vector<double> values, double percentile) {
  if (values.empty()) return kNaN;
  std::sort(values.begin(), values.end());
  const double position = percentile / 100.0 * double(values.size() - 1);
  const std::size_t lo = std::size_t(std::floor(position));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  const double gamma = position - double(lo), a = values[lo], b = values[hi], diff = b - a;
  return gamma >= 0.5 ? b - diff * (1.0 - gamma) : a + diff * gamma;
}

// sklearn's svd_flip(u_based_decision=False): each row of Vt is signed so that its
// largest-magnitude entry (the first one, on ties) is positive.
void flip_rows(std::vector<double>& vt, int n) {
  for (int i = 0; i < n; ++i) {
    double* row = vt.data() + std::size_t(i) * n;
    int arg = 0;
    for (int j = 1; j < n; ++j)
      if (std::fabs(row[j]) > std::fabs(row[arg])) arg = j;
    const double sign = row[arg] > 0 ? 1.0 : row[arg] < 0 ? -1.0 : 0.0;
    for (int j = 0; j < n; ++j) row[j] *= sign;
  }
}

// ComponentChooser (singleview).
int choose_components(const ComponentsToKeep& keep, const std::vector<double>& ratio) {
  const int dims = int(ratio.size());
  if (const int* count = std::get_if<int>(&keep)) {
    if (*count > dims)
      throw UserError("components_to_keep was set to " + std::to_string(*count) +
                          ", exceeding the maximum value of " + std::to_string(dims) +
                          " observation dims",
                      "use at most " + std::to_string(dims) +
                          " components, or a fraction of explained variance such as 0.99");
    // lightning-pose passes 0 and negative counts through (0 keeps no component, -1
    // all but one, by Python slicing); neither is a sensible setting.
    if (*count < 1)
      throw UserError("components_to_keep was set to " + std::to_string(*count) + "; it must be at least 1",
                      "give a number of components, or a fraction of explained variance such as 0.99");
    return *count;
  }
  const double fraction = std::get<double>(keep);
  if (!(fraction >= 0.0 && fraction <= 1.0)) {
    std::ostringstream os;
    os << "components_to_keep was set to " << fraction << " while it has to be between 0.0 and 1.0";
    throw UserError(os.str(), "a fraction (float) is explained variance; an integer is a number of components");
  }
  if (fraction == 1.0) return dims;  // as lightning-pose: the cumsum may end just below 1
  double cumsum = 0.0;
  for (int i = 0; i < dims; ++i) {
    cumsum += ratio[i];
    if (cumsum >= fraction) return i + 1;
  }
  return dims;  // rounding left the total just below `fraction` (lightning-pose: IndexError)
}

// _singleview_format's centring of one row (x values in even columns, y in odd):
// as torch's mean and quantile, a NaN among a coordinate's values makes its centre,
// and so every value of that coordinate, NaN.
void centre_row(double* row, int dims, compute::PcaCentering centering) {
  if (centering == compute::PcaCentering::none) return;
  for (int parity = 0; parity < 2; ++parity) {
    double centre = 0.0;
    for (int d = parity; d < dims; d += 2)
      centre += std::isnan(row[d]) ? kNaN
                                   : compute::pca_center_weight(row + parity, 2, dims / 2, d / 2, centering) * row[d];
    for (int d = parity; d < dims; d += 2) row[d] -= centre;
  }
}

}  // namespace

std::vector<int> pca_gather_table(const KeypointPcaSettings& settings, int num_keypoints,
                                  int& rows_per_frame) {
  std::vector<int> gather;
  if (settings.mode == PcaMode::singleview) {
    std::vector<int> columns;
    if (settings.columns_for_singleview_pca) {
      columns = *settings.columns_for_singleview_pca;
      if (columns.empty())
        throw UserError("columns_for_singleview_pca is empty",
                        "list the keypoint indices for the singleview PCA, or leave the key out to use all");
    } else {
      for (int k = 0; k < num_keypoints; ++k) columns.push_back(k);
    }
    for (int k : columns) {
      check_index(k, num_keypoints, "columns_for_singleview_pca");
      gather.push_back(2 * k);
      gather.push_back(2 * k + 1);
    }
    rows_per_frame = 1;
    return gather;
  }
  // format_multiview_data_for_pca: one row per (frame, matched keypoint i); its
  // columns are view 0's x, y, view 1's x, y, ... of keypoint i.
  const auto& views = settings.mirrored_column_matches;
  if (views.size() < 2)
    throw UserError("pca_multiview needs mirrored_column_matches with at least two views (got " +
                        std::to_string(views.size()) + ")",
                    "give one list of keypoint indices per view, e.g. [[0, 1, 2], [3, 4, 5]]");
  const std::size_t matched = views[0].size();
  for (std::size_t v = 0; v < views.size(); ++v) {
    if (views[v].size() != matched || matched == 0)
      throw UserError("mirrored_column_matches: view " + std::to_string(v) + " lists " +
                          std::to_string(views[v].size()) + " keypoints, view 0 lists " +
                          std::to_string(matched),
                      "every view must list the same body parts, in the same order");
    for (int k : views[v]) check_index(k, num_keypoints, "mirrored_column_matches");
  }
  const int dims = int(2 * views.size());
  gather.assign(matched * std::size_t(dims), 0);
  for (std::size_t i = 0; i < matched; ++i)
    for (std::size_t v = 0; v < views.size(); ++v) {
      gather[i * dims + 2 * v] = 2 * views[v][i];
      gather[i * dims + 2 * v + 1] = 2 * views[v][i] + 1;
    }
  rows_per_frame = int(matched);
  return gather;
}

KeypointPca fit_keypoint_pca(const std::vector<float>& keypoints, int num_keypoints,
                             const KeypointPcaSettings& settings) {
  TRAINER_ASSERT(num_keypoints > 0 && keypoints.size() % (2 * std::size_t(num_keypoints)) == 0,
                 "fit_keypoint_pca: " << keypoints.size() << " values for " << num_keypoints << " keypoints");
  KeypointPca out;
  out.mode = settings.mode;
  out.num_keypoints = num_keypoints;
  out.gather = pca_gather_table(settings, num_keypoints, out.rows_per_frame);
  const int R = out.rows_per_frame, D = int(out.gather.size()) / R;
  const std::size_t K2 = 2 * std::size_t(num_keypoints), frames = keypoints.size() / K2;
  out.dims = D;
  out.rows = int(frames) * R;
  const std::size_t N = std::size_t(out.rows);

  // The data matrix X [N, D] (KeypointPCA._format_data).
  std::vector<double> x(N * D);
  for (std::size_t f = 0; f < frames; ++f)
    for (int r = 0; r < R; ++r)
      for (int d = 0; d < D; ++d)
        x[(f * R + r) * D + d] = keypoints[f * K2 + out.gather[std::size_t(r) * D + d]];
  if (settings.mode == PcaMode::singleview) {
    out.centering = settings.centering;
    for (std::size_t n = 0; n < N; ++n) centre_row(x.data() + n * D, D, out.centering);
  }

  // KeypointPCA._check_data (NaN rows count, as there).
  if (N < std::size_t(D))
    throw UserError("cannot fit the " + mode_name(settings.mode) + " PCA with " + std::to_string(N) +
                        " samples < " + std::to_string(D) + " observation dimensions",
                    settings.mode == PcaMode::singleview
                        ? "label more frames, or pick fewer keypoints with columns_for_singleview_pca"
                        : "label more frames, or match fewer views in mirrored_column_matches");

  // mean_ = np.nanmean(X, axis=0).
  out.mean.assign(D, 0.0);
  std::vector<std::size_t> counts(D, 0);
  for (std::size_t n = 0; n < N; ++n)
    for (int d = 0; d < D; ++d)
      if (!std::isnan(x[n * D + d])) {
        out.mean[d] += x[n * D + d];
        ++counts[d];
      }
  for (int d = 0; d < D; ++d) out.mean[d] /= double(counts[d]);  // NaN columns are caught below

  // np.ma.cov(np.ma.masked_invalid(X), rowvar=False): centred by the masked column
  // means, masked entries as 0, each entry divided by (jointly valid rows - 1).
  std::vector<double> xc(N * D);
  std::vector<char> valid(N * D);
  for (std::size_t i = 0; i < N * D; ++i) {
    valid[i] = !std::isnan(x[i]);
    xc[i] = valid[i] ? x[i] - out.mean[i % D] : 0.0;
  }
  std::vector<double> cov(std::size_t(D) * D);
  for (int a = 0; a < D; ++a)
    for (int b = a; b < D; ++b) {
      double sum = 0.0;
      long joint = 0;
      for (std::size_t n = 0; n < N; ++n) {
        sum += xc[n * D + a] * xc[n * D + b];
        joint += valid[n * D + a] && valid[n * D + b];
      }
      if (joint < 2) {
        const int ka = out.gather[a] / 2, kb = out.gather[b] / 2;
        throw UserError("cannot fit the " + mode_name(settings.mode) + " PCA: keypoints " +
                            std::to_string(ka) + " and " + std::to_string(kb) + " are labelled together in " +
                            std::to_string(joint) + " PCA rows, fewer than 2",
                        "label more frames, or leave these keypoints out of the PCA");
      }
      cov[std::size_t(a) * D + b] = cov[std::size_t(b) * D + a] = sum / double(joint - 1);
    }

  // eigh, descending, negative eigenvalues clipped, svd_flip on Vt's rows.
  SymmetricEigen eig = symmetric_eigen(cov, D);
  for (double& v : eig.values) v = v < 0.0 ? 0.0 : v;
  flip_rows(eig.vectors, D);
  double total = 0.0;
  for (double v : eig.values) total += v;
  if (!(total > 0.0))
    throw UserError("cannot fit the " + mode_name(settings.mode) + " PCA: the labelled keypoints do not vary",
                    "check the label file");
  out.explained_variance = eig.values;
  out.explained_variance_ratio.resize(D);
  for (int d = 0; d < D; ++d) out.explained_variance_ratio[d] = eig.values[d] / total;

  // KeypointPCA._choose_n_components.
  if (settings.mode == PcaMode::multiview) {
    out.components_kept = 3;  // all views are explained by the 3-D body part
    const bool three = std::visit([](auto v) { return v == 3; }, settings.components_to_keep);
    if (!three) {
      std::ostringstream os;
      os << "for pca_multiview loss, you specified ";
      std::visit([&](auto v) { os << v; }, settings.components_to_keep);
      os << " components_to_keep, but we will instead keep 3 components";
      out.warnings.push_back(os.str());
    }
  } else {
    out.components_kept = choose_components(settings.components_to_keep, out.explained_variance_ratio);
  }
  const int C = out.components_kept;
  out.components.assign(eig.vectors.begin(), eig.vectors.begin() + std::size_t(C) * D);

  // EmpiricalEpsilon over the per-pair reprojection errors of the training rows; a
  // row with a NaN reprojects to NaN everywhere, and nanpercentile skips it.
  std::vector<double> errors, c(D), p(C);
  for (std::size_t n = 0; n < N; ++n) {
    bool complete = true;
    for (int d = 0; d < D; ++d) complete = complete && valid[n * D + d];
    if (!complete) continue;
    ++out.complete_rows;
    for (int d = 0; d < D; ++d) c[d] = x[n * D + d] - out.mean[d];
    for (int j = 0; j < C; ++j) {
      double acc = 0.0;
      for (int d = 0; d < D; ++d) acc += out.components[std::size_t(j) * D + d] * c[d];
      p[j] = acc;
    }
    for (int d = 0; d < D; d += 2) {
      double e[2];
      for (int h = 0; h < 2; ++h) {
        double acc = 0.0;
        for (int j = 0; j < C; ++j) acc += out.components[std::size_t(j) * D + d + h] * p[j];
        e[h] = c[d + h] - acc;
      }
      errors.push_back(std::sqrt(e[0] * e[0] + e[1] * e[1]));
    }
  }
  const double percentile = settings.empirical_epsilon_percentile;
  if (!(percentile >= 0.0 && percentile <= 100.0)) {
    std::ostringstream os;
    os << "empirical_epsilon_percentile " << percentile << " is outside [0, 100]";
    throw UserError(os.str(), "the default is 99");
  }
  out.empirical_epsilon = percentile_linear(std::move(errors), percentile);
  if (settings.epsilon) {
    out.epsilon = *settings.epsilon;
  } else {
    out.epsilon = out.empirical_epsilon * settings.empirical_epsilon_multiplier;
    if (!std::isfinite(out.epsilon))
      throw UserError("cannot set the " + mode_name(settings.mode) +
                          " epsilon: no training frame has every PCA keypoint labelled",
                      "set a fixed epsilon for the loss, or label the PCA keypoints together in some frames");
  }
  return out;
}

std::vector<double> pca_reprojection_error(const KeypointPca& pca, const std::vector<float>& keypoints) {
  const std::size_t K = static_cast<std::size_t>(pca.num_keypoints), D = static_cast<std::size_t>(pca.dims);
  const std::size_t C = static_cast<std::size_t>(pca.components_kept), R = static_cast<std::size_t>(pca.rows_per_frame);
  const std::size_t frames = K ? keypoints.size() / (2 * K) : 0;
  std::vector<double> error(frames * K, kNaN);
  std::vector<double> row(D), low(C);
  for (std::size_t f = 0; f < frames; ++f) {
    const float* kp = keypoints.data() + f * 2 * K;
    for (std::size_t r = 0; r < R; ++r) {
      const int* gather = pca.gather.data() + r * D;
      for (std::size_t d = 0; d < D; ++d) row[d] = kp[gather[d]];
      centre_row(row.data(), static_cast<int>(D), pca.centering);
      bool finite = true;
      for (std::size_t d = 0; d < D; ++d) finite = finite && !std::isnan(row[d]);
      if (!finite) continue;  // the keypoints stay NaN, as torch's arithmetic leaves them
      // sklearn's transform then inverse_transform: mean + ((x - mean) C^T) C.
      for (std::size_t c = 0; c < C; ++c) {
        double sum = 0;
        for (std::size_t d = 0; d < D; ++d) sum += (row[d] - pca.mean[d]) * pca.components[c * D + d];
        low[c] = sum;
      }
      for (std::size_t d = 0; d + 1 < D; d += 2) {
        double rx = pca.mean[d], ry = pca.mean[d + 1];
        for (std::size_t c = 0; c < C; ++c) {
          rx += low[c] * pca.components[c * D + d];
          ry += low[c] * pca.components[c * D + d + 1];
        }
        const double dx = row[d] - rx, dy = row[d + 1] - ry;
        error[f * K + static_cast<std::size_t>(gather[d] / 2)] = std::sqrt(dx * dx + dy * dy);
      }
    }
  }
  return error;
}

compute::PcaLossTableBuffers make_pca_loss_tables(compute::Backend& backend, const KeypointPca& pca,
                                                  compute::Stream& s) {
  const std::vector<float> mean(pca.mean.begin(), pca.mean.end());
  const std::vector<float> components(pca.components.begin(), pca.components.end());
  return compute::PcaLossTableBuffers(backend, mean, components, pca.gather, pca.rows_per_frame,
                                      pca.num_keypoints, float(pca.epsilon), pca.centering, s);
}

}  // namespace trainer::train
