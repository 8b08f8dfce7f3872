// uint8 rows times an int8 matrix on AVX-512 VNNI (vpdpbusd: four u8 x s8 products summed
// into each int32 lane, exact), for the cpu kernels that take the zero points' terms
// themselves (quantized_lstm_kernel.cc):
//
//   VnniB b;  packVnniB(w8, K, N, &b);                  // once, at compile
//   vnniGemm(M, a, lda, b, c, ldc, 0, b.panels);          // c[m][j] = sum_k a[m][k] * w8[k][j]
//
// b is packed in panels of 16 columns, each [ceil(K / 4)][16 columns x 4 bytes]; the rows
// of a must be readable (and zero) up to padK() bytes. b.colsum[j] = sum_k w8[k][j], for
// a zero point's term. Only where cpuTier() has AVX-512 VNNI (vnniGemmAvailable()).
#pragma once

#include <cstdint>
#include <vector>

namespace gkrt::cpu {

struct VnniB {
  int64_t K = 0, N = 0, groups = 0, panels = 0;  // groups: ceil(K / 4); panels: ceil(N / 16)
  std::vector<int8_t> data;
  std::vector<int32_t> colsum;
  int64_t padK() const { return groups * 4; }
};

bool vnniGemmAvailable();
// w8: K x N int8, row-major.
void packVnniB(const int8_t* w8, int64_t K, int64_t N, VnniB* out);
// Panels [p0, p1) of c (M x N int32, stride ldc) = a (M x padK uint8, stride lda) @ w8.
void vnniGemm(int64_t M, const uint8_t* a, int64_t lda, const VnniB& b, int32_t* c, int64_t ldc, int64_t p0, int64_t p1);

}  // namespace gkrt::cpu
