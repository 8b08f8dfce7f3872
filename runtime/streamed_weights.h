// Weights a backend's kernels stream as they are at every step (Backend::
// streamsConstantInput: on the cpu, BlockQuantMatMul's values, scales and offsets, a
// decoder's every projection read whole for each token) copied once into huge-page memory (runtime/base/huge_page_arena.h), so the decode step walks
// 2 MiB pages instead of 4 KiB ones: SmolLM2's int4 .gkm on a 2-core EPYC, 215 -> 281
// tokens/s at 2 threads, 163 -> 174 at one. Weights already there (a GGUF's converted
// blocks) stay put; nothing is copied where the kernel has no transparent huge pages.
#pragma once

#include <cstddef>

#include "backends/backend.h"
#include "runtime/ir/graph.h"

namespace gkrt {

// Replaces the constants `backend` streams in `g` with copies in one arena (the caller's
// graph keeps its own); returns the bytes copied.
size_t placeStreamedWeights(ir::Graph& g, const Backend& backend);

}  // namespace gkrt
