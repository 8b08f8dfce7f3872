#include "fusion/passes/pattern_passes.h"

namespace gkrt::passes {

// on_cpu / on_gpu: measured (docs/fusion-and-flags.md, "Pattern passes"). Under the gpu column, measured on
// an H200 (bench/README.md, 2026-11-26): the attention passes (the rendered FlashAttention
// kernel) and the GEMM bias/residual epilogues (cuBLASLt) take the zoo transformer block
// from 0.99x to 0.88x PyTorch's best, so they are on; add_layer_norm_fusion measured no
// faster than the clustered norm and stays off, as do the passes no GPU has timed yet. The quantised RmsNorm passes are on under cpu (their int8 kernel replaces
// two reference kernels), and so is inference_qbmm_add_fusion (QuantBatchMatMul on
// oneDNN's VNNI int8 matmul: 3.7x the float32 GEMM on the dequantized weights).
const std::vector<PatternPass>& patternPasses() {
  static const std::vector<PatternPass> p = {
      // The tiled attention kernel (backends/cpu/nn/flash_attention_kernel.cc) runs as fast as
      // oneDNN's two batched matmuls, the softmax and the head transposes it replaces, with
      // half the kernels and no score matrix in the arena (docs/fusion-and-flags.md): on under cpu.
      {"FlashAttentionFusionV1", fuseFlashAttentionV1, true, true},
      {"FlashAttentionFusionV2", fuseFlashAttentionV2, true, true},
      {"add_layer_norm_fusion", fuseAddLayerNorm, true, false},
      {"add_layer_norm_v3_fusion", fuseAddLayerNormV3, true, false},
      {"add_layer_norm_ext_fusion", fuseAddLayerNormExt, true, false},
      {"inference_swiglu_fusion", fuseSwiGLU, true, false},
      {"inference_matmul_split_fusion", fuseMatMulSplit, true, false},
      {"shape_reshape", fuseShapeReshape, true, true},
      {"shape_reshape_2", fuseShapeReshape2, true, true},
      {"add_rms_norm_quant_fusion", fuseAddRmsNormQuant, true, false},
      {"rms_norm_quant_fusion", fuseRmsNormQuant, true, false},
      {"add_rms_norm_fusion", fuseAddRmsNorm, true, false},
      {"add_cast_rms_norm_cast_fusion", fuseAddCastRmsNormCast, true, false},
      {"MatMulAllReduce", fuseMatMulAllReduce, true, false},
      {"split_concat_fusion", fuseSplitConcat, false, false},
      {"matmul_elem_biasadd_fusion", fuseMatMulBiasAdd, true, true},
      {"matmul_elem_add_fusion", fuseMatMulAdd, true, true},
      {"matmul_elem_relu_fusion", fuseMatMulRelu, true, false},
      {"matmul_elem_gelu_fusion", fuseMatMulGelu, true, false},
      {"inference_qbmm_add_fusion", fuseQbmmAdd, true, false},
      {"inference_qbmm_allreduce_add_fusion", fuseQbmmAllReduceAdd, true, false},
  };
  return p;
}

}  // namespace gkrt::passes
