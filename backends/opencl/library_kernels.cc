#include "backends/opencl/library_kernels.h"

namespace gkrt::opencl {

const char* libraryKernelSource() {
  return R"CLC(
#define TS 16
// C[b] = act(alpha * op(A[b]) op(B[b]) (+ beta * bias) (+ residual)): element (m, k) of
// op(A) at A[a_off + m * sam + k * sak]; per-batch offsets of A and B in `offs`; the
// residual has C's layout; act 0 none, 1 ReLU, 2 GeLU (erf), 3 GeLU (tanh). Each step
// rounds to float as the unfused ops store it (the matmul pattern ops' epilogues).
__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))
void gk_matmul(__global float* C, __global const float* A, __global const float* B, __global const int* offs,
               int M, int N, int K, int sam, int sak, int sbk, int sbn,
               float alpha, __global const float* bias, int has_bias, float beta, int sbm2, int sbn2,
               __global const float* residual, int has_residual, int act) {
  const int n = get_global_id(0), m = get_global_id(1), b = get_global_id(2);
  const int ln = get_local_id(0), lm = get_local_id(1);
  __local float As[TS][TS + 1];
  __local float Bs[TS][TS + 1];
  A += offs[2 * b];
  B += offs[2 * b + 1];
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TS) {
    const int ka = k0 + ln, kb = k0 + lm;
    As[lm][ln] = (m < M && ka < K) ? A[m * sam + ka * sak] : 0.0f;
    Bs[lm][ln] = (kb < K && n < N) ? B[kb * sbk + n * sbn] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TS; ++k) acc += As[lm][k] * Bs[k][ln];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (m < M && n < N) {
    const long at = (long)b * M * N + (long)m * N + n;
    float v = alpha * acc;
    if (has_bias) v += beta * bias[m * sbm2 + n * sbn2];
    if (has_residual) v += residual[at];
    if (act == 1) v = v > 0.0f ? v : 0.0f;
    if (act == 2) v = 0.5f * v * (1.0f + erf(v * 0.70710678f));
    if (act == 3) v = 0.5f * v * (1.0f + tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
    C[at] = v;
  }
}

// NCHW input, OIHW weights, pads top/left; one work-item per output element.
__kernel void gk_conv2d(__global float* Y, __global const float* X, __global const float* W,
                        __global const float* bias, int has_bias, int N, int C, int H, int Wd, int OC, int OH, int OW,
                        int KH, int KW, int sh, int sw, int pt, int pl, int dh, int dw, int groups) {
  const long total = (long)N * OC * OH * OW;
  const int cpg = C / groups, ocpg = OC / groups;
  for (long i = get_global_id(0); i < total; i += get_global_size(0)) {
    const int ow = i % OW;
    long t = i / OW;
    const int oh = t % OH;
    t /= OH;
    const int oc = t % OC;
    const int n = t / OC;
    const int g = oc / ocpg;
    float acc = has_bias ? bias[oc] : 0.0f;
    for (int ic = 0; ic < cpg; ++ic) {
      __global const float* xp = X + ((long)n * C + g * cpg + ic) * H * Wd;
      __global const float* wp = W + ((long)oc * cpg + ic) * KH * KW;
      for (int kh = 0; kh < KH; ++kh) {
        const int ih = oh * sh - pt + kh * dh;
        if (ih < 0 || ih >= H) continue;
        for (int kw = 0; kw < KW; ++kw) {
          const int iw = ow * sw - pl + kw * dw;
          if (iw >= 0 && iw < Wd) acc += xp[ih * Wd + iw] * wp[kh * KW + kw];
        }
      }
    }
    Y[i] = acc;
  }
}

// Max (NaN skipped) or average pooling over NCHW planes; pads top, left, bottom, right.
__kernel void gk_pool(__global float* Y, __global const float* X, int is_max, int count_include_pad, int planes,
                      int H, int Wd, int OH, int OW, int KH, int KW, int sh, int sw, int pt, int pl, int pb, int pr) {
  const long total = (long)planes * OH * OW;
  for (long i = get_global_id(0); i < total; i += get_global_size(0)) {
    const int ow = i % OW, oh = (i / OW) % OH;
    const long p = i / ((long)OW * OH);
    const int h0 = oh * sh - pt, w0 = ow * sw - pl;
    const int h1 = min(h0 + KH, H + pb), w1 = min(w0 + KW, Wd + pr);
    const int hb = max(h0, 0), he = min(h1, H), wb = max(w0, 0), we = min(w1, Wd);
    float acc = is_max ? -as_float(0x7f800000) : 0.0f;
    for (int h = hb; h < he; ++h)
      for (int w = wb; w < we; ++w) {
        const float v = X[(p * H + h) * Wd + w];
        acc = is_max ? (v > acc ? v : acc) : acc + v;
      }
    if (!is_max) {
      const int count = count_include_pad ? (h1 - h0) * (w1 - w0) : (he - hb) * (we - wb);
      acc /= (float)max(count, 1);
    }
    Y[i] = acc;
  }
}

// Softmax (log_softmax = 0) or log-softmax along an axis of extent E, the tensor seen as
// [outer, E, inner]; one work-item per (outer, inner) lane.
__kernel void gk_softmax(__global float* Y, __global const float* X, int log_softmax, long lanes, int E, int inner) {
  for (long l = get_global_id(0); l < lanes; l += get_global_size(0)) {
    const long base = (l / inner) * (long)E * inner + l % inner;
    float mx = -as_float(0x7f800000);
    for (int e = 0; e < E; ++e) {
      const float v = X[base + (long)e * inner];
      mx = (isnan(v) || v > mx) ? v : mx;
    }
    float sum = 0.0f;
    for (int e = 0; e < E; ++e) sum += exp(X[base + (long)e * inner] - mx);
    if (log_softmax) {
      const float ls = log(sum);
      for (int e = 0; e < E; ++e) Y[base + (long)e * inner] = X[base + (long)e * inner] - mx - ls;
    } else {
      const float inv = 1.0f / sum;
      for (int e = 0; e < E; ++e) Y[base + (long)e * inner] = exp(X[base + (long)e * inner] - mx) * inv;
    }
  }
}

// LayerNorm over rows of `cols` elements: one work-group (64 work-items) per row.
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void gk_layernorm(__global float* Y, __global float* mean_out, __global float* var_out, __global const float* X,
                  __global const float* gamma, __global const float* beta, int flags, int rows, int cols, float eps) {
  __local float red[64];
  const int lid = get_local_id(0);
  for (int r = get_group_id(0); r < rows; r += get_num_groups(0)) {
    __global const float* x = X + (long)r * cols;
    // The mean of the row shifted by its first element: a constant row gets its value back
    // exactly (x - mean == 0, not a rounding residue that 1/sqrt(eps) would amplify), and
    // a row far from zero loses fewer bits to the sum.
    const float shift = x[0];
    float s = 0.0f;
    for (int k = lid; k < cols; k += 64) s += x[k] - shift;
    red[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = 32; h > 0; h >>= 1) {
      if (lid < h) red[lid] += red[lid + h];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float mean = shift + red[0] / (float)cols;
    barrier(CLK_LOCAL_MEM_FENCE);
    s = 0.0f;
    for (int k = lid; k < cols; k += 64) s += (x[k] - mean) * (x[k] - mean);
    red[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = 32; h > 0; h >>= 1) {
      if (lid < h) red[lid] += red[lid + h];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float var = red[0] / (float)cols;
    barrier(CLK_LOCAL_MEM_FENCE);
    const float rstd = 1.0f / sqrt(var + eps);
    for (int k = lid; k < cols; k += 64) {
      float v = (x[k] - mean) * rstd;
      if (flags & 1) v *= gamma[k];
      if (flags & 2) v += beta[k];
      Y[(long)r * cols + k] = v;
    }
    if (lid == 0 && (flags & 4)) mean_out[r] = mean;
    if (lid == 0 && (flags & 8)) var_out[r] = var;
  }
}

)CLC";
}

}  // namespace gkrt::opencl
