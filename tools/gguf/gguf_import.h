// A GGUF decoder LLM (llama.cpp's format) as a gkrt graph, the way `gkrt convert` and
// `gkrt generate MODEL.gguf` take it. Architectures: "llama" (Llama 2/3, SmolLM2,
// TinyLlama, Mistral; the Q/K rotary row permutation of llama.cpp's converter undone)
// and "qwen2" (Q/K/V biases). Weight types: F32, F16, BF16 (as float32), and Q4_0,
// Q4_1, Q8_0, Q4_K, Q6_K kept in their blocks as BlockQuantMatMul weights
// (gguf_blocks.h); a quantized token embedding is gathered from its blocks (values one
// a byte) and widened after the gather.
//
// The graph is the decoder with its KV cache as inputs and outputs, as exporters write
// it and as Generator binds it (fusion/kv_cache.h):
//   input_ids, position_ids int64 [1, sequence_length]
//   past_key_values.N.key / .value float32 [1, kv_heads, past_sequence_length, head_dim]
//   -> logits float32 [1, sequence_length, vocabulary], present.N.key / .value
// The file's metadata (tokenizer, hyper-parameters, chat template), as a GGUF file
// without tensors, goes into the graph's metadata under kGgufMetadataKey and from
// there into the .gkm (runtime/model_io.h), so a converted model keeps its tokenizer.
#pragma once

#include <string>

#include "runtime/ir/graph.h"
#include "tools/gguf/gguf_file.h"

namespace gkrt::gguf {

struct ImportOptions {
  // Quantized weights: activations quantized to int8 per block of a row for the
  // matmuls, as llama.cpp does (BlockQuantMatMul precision int8); false: float32.
  bool int8_activations = true;
};

StatusOr<ir::Graph> importGguf(const GgufFile& file, const std::string& what, const ImportOptions& options = {});
StatusOr<ir::Graph> importGguf(const std::string& path, const ImportOptions& options = {});

}  // namespace gkrt::gguf
