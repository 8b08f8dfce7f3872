// Reading and writing .gkm model files.
//
//   StatusOr<ir::Graph> g = loadModelFile("net.gkm");
//   if (!g.ok()) { puts(g.status().toString().c_str()); return 1; }
//   RETURN_IF_ERROR(saveModelFile(*g, "copy.gkm"));
//
// Loading verifies the flatbuffer, then checks the model's meaning (ops, arity,
// attributes, indices, constant sizes, cycles, produced outputs) and, when the input
// shapes are static, infers every shape. Any bad file gives a Status naming the
// tensor or node at fault; nothing aborts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/ir/graph.h"
#include "runtime/resource_limits.h"

namespace gkrt {

constexpr uint32_t kSchemaVersion = 1;
constexpr const char* kModelFileIdentifier = "GKM1";
// The graph metadata key of a model converted from GGUF: the source file's header and
// metadata as a GGUF file without tensors (its tokenizer, hyper-parameters, chat
// template). Saved in Model.gguf_metadata (bytes), not as a metadata entry.
constexpr const char* kGgufMetadataKey = "gguf.metadata";

// Constants point into the mapped file (no copy) and keep the mapping alive.
StatusOr<ir::Graph> loadModelFile(const std::string& path);
// Copies the bytes it needs; `data` may be freed after the call.
StatusOr<ir::Graph> loadModelBuffer(const void* data, size_t size);
// The same, refusing graphs larger or deeper than `limits` (the two above use the defaults).
StatusOr<ir::Graph> loadModelFile(const std::string& path, const ModelLimits& limits);
StatusOr<ir::Graph> loadModelBuffer(const void* data, size_t size, const ModelLimits& limits);

StatusOr<std::vector<uint8_t>> serializeModel(const ir::Graph& g);
Status saveModelFile(const ir::Graph& g, const std::string& path);

}  // namespace gkrt
