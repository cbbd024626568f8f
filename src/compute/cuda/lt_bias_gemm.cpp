// A Linear's product and bias in one cuBLASLt call (see lt_bias_gemm.hpp).
#include "compute/cuda/lt_bias_gemm.hpp"

#include <cstdint>  // std::uintptr_t, std::uint64_t, std::int64_t, std::int32_t, std::uint32_t

#include "compute/cuda/cuda_check.hpp"  // CUBLAS_CHECK

namespace trainer::compute::cuda {

namespace {

// cuBLASLt's descriptors, each destroyed with its owner.
struct MatmulDescDeleter {
  void operator()(cublasLtMatmulDescOpaque_t* d) const { cublasLtMatmulDescDestroy(d); }
};
struct LayoutDeleter {
  void operator()(cublasLtMatrixLayoutOpaque_t* l) const { cublasLtMatrixLayoutDestroy(l); }
};
struct PreferenceDeleter {
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const { cublasLtMatmulPreferenceDestroy(p); }
};
using MatmulDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, MatmulDescDeleter>;
using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LayoutDeleter>;
using Preference = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, PreferenceDeleter>;

// The largest power of two up to 256 that divides the address (cuBLASLt's algorithms
// state the alignment they need; the heuristic offers only those the pointers meet).
int alignment_of(const void* p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  int alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

Layout layout(cudaDataType_t type, std::uint64_t rows, std::uint64_t cols, std::int64_t ld) {
  cublasLtMatrixLayout_t l = nullptr;
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, type, rows, cols, ld));
  return Layout(l);
}

template <class T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value) {
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value)));
}

template <class T>
void set_preference(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attribute, const T& value) {
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attribute, &value, sizeof(value)));
}

}  // namespace

struct LtBiasGemm::Plan {
  MatmulDesc desc;
  Layout a, b, d;  // cuBLASLt's A (our b), B (our a) and D, column-major
  cublasLtMatmulAlgo_t algo{};
};

LtBiasGemm::LtBiasGemm() = default;

LtBiasGemm::~LtBiasGemm() = default;

// cuBLASLt is column-major, so the row-major d = op(a) op(b) is the column-major
// d^T = op(b)^T op(a)^T, as CudaTransformerOps::matmul calls cuBLAS: cuBLASLt's A is our
// b, its B our a, and D's rows (the bias's length) are our n columns.
const LtBiasGemm::Plan* LtBiasGemm::plan_for(const Key& key, const MatmulShape& g, cudaDataType_t type,
                                             cublasComputeType_t compute, const float* bias) {
  const auto found = plans_.find(key);
  if (found != plans_.end()) return found->second.get();
  if (!handle_) handle_ = std::make_unique<CublasLtHandle>();
  auto plan = std::make_unique<Plan>();
  cublasLtMatmulDesc_t desc = nullptr;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F));
  plan->desc.reset(desc);
  const cublasOperation_t op_a = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLASLt's A: our b
  const cublasOperation_t op_b = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLASLt's B: our a
  // The value types cublasLt.h documents for each attribute.
  set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSA, std::int32_t(op_a));
  set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSB, std::int32_t(op_b));
  set_desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, std::uint32_t(CUBLASLT_EPILOGUE_BIAS));
  set_desc(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, std::int32_t(CUDA_R_32F));
  set_desc(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(bias));  // its alignment counts
  // Stored shapes: our b is [k, n] row-major ([n, k] transposed), i.e. column-major
  // n x k (k x n transposed); our a likewise k x m (m x k); d is n x m.
  plan->a = g.transpose_b ? layout(type, g.k, g.n, g.ldb) : layout(type, g.n, g.k, g.ldb);
  plan->b = g.transpose_a ? layout(type, g.m, g.k, g.lda) : layout(type, g.k, g.m, g.lda);
  plan->d = layout(CUDA_R_32F, g.n, g.m, g.ldc);

  cublasLtMatmulPreference_t pref_raw = nullptr;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref_raw));
  const Preference pref(pref_raw);
  set_preference(pref_raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, std::uint64_t(kWorkspaceBytes));
  set_preference(pref_raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, std::uint32_t(std::get<11>(key)));
  set_preference(pref_raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, std::uint32_t(std::get<10>(key)));
  set_preference(pref_raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, std::uint32_t(std::get<12>(key)));
  set_preference(pref_raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, std::uint32_t(std::get<12>(key)));
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(*handle_, desc, plan->a.get(), plan->b.get(),
                                                               plan->d.get(), plan->d.get(), pref_raw, 1, &result,
                                                               &count);
  if (status != CUBLAS_STATUS_SUCCESS || count == 0) {
    refuse(key, g, status == CUBLAS_STATUS_SUCCESS ? "no algorithm" : cublasGetStatusString(status));
    return nullptr;
  }
  plan->algo = result.algo;
  return plans_.emplace(key, std::move(plan)).first->second.get();
}

void LtBiasGemm::refuse(const Key& key, const MatmulShape& g, const std::string& why) {
  if (note_.empty())
    note_ = "cuBLASLt's bias epilogue did not take [" + std::to_string(g.m) + " x " + std::to_string(g.k) + "] x [" +
            std::to_string(g.k) + " x " + std::to_string(g.n) + "] (" + why +
            "); that product adds its bias separately";
  plans_[key] = nullptr;
}

bool LtBiasGemm::run(const MatmulShape& g, const void* a, const void* b, cudaDataType_t type,
                     cublasComputeType_t compute, float* d, const float* bias, void* workspace, cudaStream_t stream) {
  if (g.batch != 1 || g.alpha != 1.f || g.beta != 0.f || !bias || g.m <= 0 || g.n <= 0 || g.k <= 0) return false;
  const Key key{g.m,         g.n,          g.k,     g.lda, g.ldb, g.ldc, g.transpose_a, g.transpose_b, int(type),
                int(compute), alignment_of(a), alignment_of(b), alignment_of(d), alignment_of(bias)};
  const Plan* plan = plan_for(key, g, type, compute, bias);
  if (!plan) return false;
  // The descriptor is the shape's, the bias this call's (same alignment: it is in the key).
  set_desc(plan->desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(bias));
  const float one = 1.f, zero = 0.f;
  // A refusal here (an algorithm the heuristic offered that then declines, as some
  // have for a bias less aligned than they need) has enqueued nothing: the caller's
  // separate add runs, now and for this key from now on.
  const cublasStatus_t status = cublasLtMatmul(*handle_, plan->desc.get(), &one, b, plan->a.get(), a, plan->b.get(),
                                               &zero, d, plan->d.get(), d, plan->d.get(), &plan->algo, workspace,
                                               kWorkspaceBytes, stream);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE) {
    refuse(key, g, cublasGetStatusString(status));
    return false;
  }
  CUBLAS_CHECK(status);
  return true;
}

}  // namespace trainer::compute::cuda
