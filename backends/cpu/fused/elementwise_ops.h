// The op loops of the fused-loop executor: each applies one op to `n` elements of
// tile buffers. Written as plain loops the compiler vectorises; semantics match the
// reference kernels (NaN-propagating Maximum/Minimum, ReLU passing NaN).
#pragma once

#include <cstdint>

namespace gkrt::cpu {

enum class EwOp : uint8_t {
  kAdd, kSub, kMul, kDiv, kMaximum, kMinimum, kPow, kSquaredDifference,
  kNeg, kAbs, kExp, kLog, kSqrt, kRsqrt, kReciprocal, kTanh, kSigmoid, kReLU, kErf, kSquare, kSin, kCos,
  kFloor, kCeil, kSiLU, kCopy,
  kPowConst,  // x ^ c with c a compile-time scalar (integer powers by multiplication)
  kClip,       // min(max(x, c), c2)
  kLeakyReLU,  // x < 0 ? c x : x
  kHSwish, kHSigmoid,
  // Comparisons: 1.0f where true, 0.0f where false (a bool value inside a fused loop).
  kEqual, kNotEqual, kGreater, kGreaterEqual, kLess, kLessEqual,
  // int32 arithmetic (two's complement wrap, as the reference kernels) on operands read as
  // raw int32 bits; the result is the float32 of the int32 value (a Cast after it copies).
  kAddInt32, kSubInt32, kMulInt32,
  kIsNan,   // 1.0f where x is NaN (a bool value inside a fused loop)
  kSelect,  // cond ? a : b, the condition a third operand (runSelect)
};

// Returns the op for a gkrt op name; false when the executor has no loop for it.
bool ewOpFor(const char* name, int num_inputs, EwOp* op);

// The comparison op for a gkrt op name (Equal, Greater, ...); false for other ops.
bool ewCompareFor(const char* name, EwOp* op);
// The int32 arithmetic op for Add, Sub or Mul; false for other ops.
bool ewInt32For(const char* name, EwOp* op);

// y = cond != 0 ? a : b (Select with its bool condition as 0/1 floats).
void runSelect(float* y, const float* cond, const float* a, const float* b, int64_t n);

// `c` and `c2`: the compile-time parameters of kPowConst, kClip and kLeakyReLU.
void runEwOp(EwOp op, float* y, const float* a, const float* b, int64_t n, float c, float c2 = 0.0f);

// A binary op with one operand a scalar (no tile filled with it): y = op(a, s) when
// `scalar_first` is false, y = op(s, b) when true. False for ops without such a loop.
bool runEwOpScalar(EwOp op, float* y, const float* v, float s, bool scalar_first, int64_t n);
// Whether runEwOpScalar has a loop for `op` (it returns false for the others).
bool ewOpHasScalarLoop(EwOp op);

}  // namespace gkrt::cpu
