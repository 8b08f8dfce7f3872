// The graph of 8-bit values the GPU dialects render (tests: OpenClBackend.EightBitValues*,
// CudaDialect.EightBitValues*): a quantized embedding gathered in its int8 values and
// widened after the gather (the GGUF importer's form), uint8 compared with a constant and
// selected, int32 narrowed to int8.
//
//   auto g = testing::eightBitValuesGraph();   // inputs ids int32 [5], q uint8 [5, 6]
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/builder.h"

namespace gkrt::testing {

inline StatusOr<ir::Graph> eightBitValuesGraph() {
  GraphBuilder b;
  std::vector<int8_t> table(32 * 6);
  for (size_t k = 0; k < table.size(); ++k) table[k] = static_cast<int8_t>(int(k * 37 % 255) - 127);
  Value ids = b.input("ids", DType::kInt32, {5});
  Value q = b.input("q", DType::kUInt8, {5, 6});
  Value rows = b.op1("Gather", {b.constant("table", DType::kInt8, {32, 6}, table.data()), ids}, AxisAttrs{0, false});
  Value wide = b.mul(b.op1("Cast", {rows}, CastAttrs{DType::kFloat32}), 0.125f);
  const uint8_t seven = 7;
  Value hit = b.op1("Greater", {q, b.constant("seven", DType::kUInt8, {}, &seven)});
  b.output(b.op1("Select", {hit, wide, b.op1("Cast", {q}, CastAttrs{DType::kFloat32})}), "y");
  b.output(b.op1("Cast", {b.op1("Cast", {q}, CastAttrs{DType::kInt32})}, CastAttrs{DType::kInt8}), "n");
  return b.finish();
}

}  // namespace gkrt::testing
