#include "fusion/passes/pattern_passes.h"

namespace gkrt::passes {

// on_cpu / on_gpu: measured (README "Pattern passes"). The gpu column keeps only the
// shape passes: opencl and cuda run the norm, SwiGLU, attention and matmul pattern ops,
// but no GPU speed has been measured for them yet (PoCL runs on the host's CPU). The quantised RmsNorm passes are on under cpu (their int8 kernel replaces
// two reference kernels), and so is inference_qbmm_add_fusion (QuantBatchMatMul on
// oneDNN's VNNI int8 matmul: 3.7x the float32 GEMM on the dequantized weights).
const std::vector<PatternPass>& patternPasses() {
  static const std::vector<PatternPass> p = {
      // The tiled attention kernel (backends/cpu/flash_attention_kernel.cc) runs as fast as
      // oneDNN's two batched matmuls, the softmax and the head transposes it replaces, with
      // half the kernels and no score matrix in the arena (README table): on under cpu.
      {"FlashAttentionFusionV1", fuseFlashAttentionV1, true, false},
      {"FlashAttentionFusionV2", fuseFlashAttentionV2, true, false},
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
      {"matmul_elem_biasadd_fusion", fuseMatMulBiasAdd, true, false},
      {"matmul_elem_add_fusion", fuseMatMulAdd, true, false},
      {"matmul_elem_relu_fusion", fuseMatMulRelu, true, false},
      {"matmul_elem_gelu_fusion", fuseMatMulGelu, true, false},
      {"inference_qbmm_add_fusion", fuseQbmmAdd, true, false},
      {"inference_qbmm_allreduce_add_fusion", fuseQbmmAllReduceAdd, true, false},
  };
  return p;
}

}  // namespace gkrt::passes
