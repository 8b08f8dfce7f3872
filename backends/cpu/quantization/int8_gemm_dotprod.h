// The int8 GEMM's SDOT path on aarch64 (backends/cpu/quantization/int8_gemm_dotprod.cc); elsewhere
// cpuHasDotProd() is false and the other functions are never called.
#pragma once

#include <cstdint>
#include <vector>

namespace gkrt::cpu {

bool cpuHasDotProd();

// b' (K x N int8, row-major, zero point already taken off) in panels of 16 columns, four
// k per column group: [panel][K/4][16][4]; col_sums = sum_k b'.
struct DotProdB {
  int64_t K = 0, N = 0, k_groups = 0;
  std::vector<int8_t> panels;
  std::vector<int32_t> col_sums;
};
void packDotProdB(const int8_t* b_shifted, int64_t K, int64_t N, DotProdB* out);

// c[0:rows][0:N] = sum_k a8 b' + correction * col_sums, for rows <= 4 rows of a (int8, or
// uint8 with a_unsigned: a8 = a - 128); a_pack: scratch of 16 * ceil(K/4) bytes.
void dotProdRows(const void* a, bool a_unsigned, int64_t rows, int32_t correction, const DotProdB& b, int32_t* c,
                 int8_t* a_pack);

}  // namespace gkrt::cpu
