// What the loader and converter fuzz targets do with a model that loaded: compile it on
// the reference backend (fusion at its default level) under a small memory cap, give
// every input a small size and small values, run it and read every output. Errors are
// fine; crashes, leaks, undefined behaviour and unbounded allocation are not.
#pragma once

#include "runtime/ir/graph.h"

namespace gkrt::fuzz {

// Caps for fuzzing: plans above this are refused (SessionOptions::max_memory_bytes).
constexpr size_t kFuzzMemoryCap = size_t{64} << 20;

void compileAndRunSmall(const ir::Graph& model);

}  // namespace gkrt::fuzz
