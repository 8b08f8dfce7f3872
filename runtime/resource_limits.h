// Caps on what a model may ask of the machine, checked before anything big is allocated.
//
//   SessionOptions o;
//   o.max_memory_bytes = 256 << 20;                    // default: defaultMaxMemoryBytes()
//   ASSIGN_OR_RETURN(size_t cap, parseByteSize("512M"));   // gkrt run --max-memory 512M
//
// A session refuses a plan whose largest tensor, activation arena, workspace or device
// buffers exceed the cap (before allocating them); the loader refuses a graph with more
// nodes or tensors, or a longer chain of nodes, than ModelLimits allows (before
// decoding it, or before shape inference).
#pragma once

#include <cstdint>

#include <cstddef>
#include <string>
#include <string_view>

#include "runtime/ir/graph.h"
#include "runtime/ir/status.h"

namespace gkrt {

// Three quarters of the machine's physical memory (1 GiB where it cannot be read).
size_t defaultMaxMemoryBytes();

// "1073741824", "512K", "256M", "2G" (powers of 1024; a trailing "B"/"iB" allowed).
StatusOr<size_t> parseByteSize(std::string_view text);
std::string formatByteSize(uint64_t bytes);  // "256 MiB", "1.5 GiB", "100 bytes"

// Error unless `bytes` <= `cap`; `what` names the request ("tensor 3 'x' (float32 1x2)").
Status checkMemoryCap(uint64_t bytes, size_t cap, const std::string& what);

// Every tensor of `g` with a static shape against `cap`, before fusion and kernel
// compilation (the arena, where tensors share bytes, is checked once planned).
Status checkTensorsFitCap(const ir::Graph& g, size_t cap);

struct ModelLimits {
  size_t max_nodes = 1'000'000;    // per graph (each subgraph counted on its own)
  size_t max_tensors = 4'000'000;  // per graph
  size_t max_depth = 100'000;      // longest chain of nodes, inputs to outputs
};

// Node and tensor counts of one graph, before it is decoded.
Status checkGraphSize(size_t nodes, size_t tensors, const ModelLimits& limits);
// The longest chain of nodes of a validated (acyclic) graph, and its subgraphs'.
Status checkGraphDepth(const ir::Graph& g, const ModelLimits& limits);

}  // namespace gkrt
