#pragma once
// A Linear layer's product and bias in one cuBLASLt call (CUBLASLT_EPILOGUE_BIAS):
// the bias is added to the fp32 accumulator before the fp32 store, the same sum as
// the product followed by TransformerOps::add_bias, without add_bias's pass over the
// output (for a ViT-S step at batch 64 about 5.5 GB of traffic; docs/GPU.md, "The
// ViT's next lever"). Plans (descriptors and the heuristic's first algorithm) are
// kept per shape, operand types and pointer alignments; a shape cuBLASLt has no
// algorithm for answers false, and the caller runs its product and add_bias instead.
// Every call enqueues on the given stream and never synchronizes (so it records into
// CUDA graphs: the workspace is the caller's). One host thread at a time, as the
// cuBLAS handle beside it (each call sets the shared descriptor's bias pointer).
#include <cstddef>  // std::size_t
#include <map>      // std::map
#include <memory>   // std::unique_ptr
#include <string>   // std::string
#include <tuple>    // std::tuple

#include <cublasLt.h>  // cublasLtHandle_t, cublasComputeType_t
#include <cuda_runtime_api.h>  // cudaStream_t, cudaDataType_t

#include "compute/cuda/cudnn_raii.hpp"  // CublasLtHandle
#include "compute/transformer_ops.hpp"     // MatmulShape

namespace trainer::compute::cuda {

class LtBiasGemm {
 public:
  // The workspace each call needs (cuBLASLt's algorithms for these sizes need no more).
  static constexpr std::size_t kWorkspaceBytes = std::size_t(8) << 20;

  LtBiasGemm();  // no cuBLASLt handle yet: made at the first product, on the device current then
  ~LtBiasGemm();  // the plans' descriptors, then the handle
  LtBiasGemm(const LtBiasGemm&) = delete;
  LtBiasGemm& operator=(const LtBiasGemm&) = delete;

  // Row-major d[m, n] = op(a) op(b) + bias[n] for g with batch 1, alpha 1, beta 0
  // (MatmulShape's transposes and leading dimensions); a and b of `type` (fp32 or the
  // 16-bit autocast type), fp32 d and bias, `compute` cuBLAS's. workspace: at least
  // kWorkspaceBytes of device memory, 256-byte aligned. False (nothing enqueued) when
  // cuBLASLt has no algorithm for it or the shape is not one this handles.
  bool run(const MatmulShape& g, const void* a, const void* b, cudaDataType_t type, cublasComputeType_t compute,
           float* d, const float* bias, void* workspace, cudaStream_t stream);

  // Why cuBLASLt first declined a shape (no algorithm, or its call refused): empty
  // when it has taken every one. Calls this does not handle at all (a batch, alpha or
  // beta, no bias) answer false without a note.
  const std::string& note() const { return note_; }

 private:
  struct Plan;
  // (m, n, k, lda, ldb, ldc, transpose_a, transpose_b, type, compute, alignments of a, b, d, bias)
  using Key = std::tuple<int, int, int, long long, long long, long long, bool, bool, int, int, int, int, int, int>;
  const Plan* plan_for(const Key& key, const MatmulShape& g, cudaDataType_t type, cublasComputeType_t compute,
                       const float* bias);
  void refuse(const Key& key, const MatmulShape& g, const std::string& why);  // no plan for key from now on
  std::unique_ptr<CublasLtHandle> handle_;  // declared before plans_: destroyed after them
  std::map<Key, std::unique_ptr<Plan>> plans_;  // null: cuBLASLt has no algorithm for that key
  std::string note_;
};

}  // namespace trainer::compute::cuda
