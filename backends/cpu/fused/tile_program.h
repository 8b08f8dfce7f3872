// The instruction form of the cpu backend's fused loops (fused_elementwise.cc,
// fused_reduce.cc): a cluster becomes a list of op loops over tiles of at most kTile
// elements. Operands are read in place when their flat order is the tile's, through
// broadcast strides otherwise, from an earlier instruction's tile buffer, or from a
// per-row value (a reduction's result broadcast back over its row).
//
//   TileRunner run(program, inputs, outputs, scratch.data(), results.data());
//   run.run(start, count);  // every instruction on elements [start, start + count)
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/fused/elementwise_ops.h"
#include "runtime/ir/graph.h"

namespace gkrt::cpu {

constexpr int64_t kTile = 512;

// Per-thread slices of one array (results, scratch) kept a cache line apart: two threads
// writing neighbouring slices' entries each tile made them trade the line (a BN+ReLU over
// [1, 512, 28, 28] took 0.148 ms at 1 thread and 0.117 at 2 before). The stride for `n`
// entries of `bytes` each: rounded up to whole lines, plus a line.
inline size_t threadStride(size_t n, size_t bytes) { return (n * bytes + 63) / 64 * 64 / bytes + 64 / bytes; }

// Where an operand's tile comes from.
struct Operand {
  enum Kind { kTemp, kFull, kScalar, kGather, kRow } kind = kTemp;
  int temp = -1;                    // kTemp: the instruction whose result it is (-1: no operand)
  int input = -1;                   // kFull/kGather/kScalar: kernel input index; -1 for a constant
  const float* constant = nullptr;  // constant data (kFull/kGather/kScalar)
  int row = -1;                     // kRow: which row value
  // kGather: broadcast strides (elements) over `dims`, the consumer's output shape.
  std::vector<int64_t> dims, strides;
  // A kernel input that a Cast or a comparison reads as float32: int32, int64, int8,
  // uint8 or bool; kFull converted as each tile loads, kGather converted whole by the
  // kernel before its loops (convertedInputs) and then read as float32.
  DType from = DType::kFloat32;
  int64_t elements = 0;  // kGather with `from` not float32: the input's element count
  bool raw_int32 = false;  // an int32 input or constant read as its bits (the kAddInt32 family)
  // An integer or bool constant a comparison reads, converted to float32 at compile
  // (`constant` points into it).
  std::shared_ptr<const std::vector<float>> owned;
};

struct Instr {
  EwOp op;
  Operand a, b;
  Operand cond;     // kSelect: the condition (0/1 floats)
  float c = 0;      // kPowConst exponent; kClip min; kLeakyReLU alpha
  float c2 = 0;     // kClip max
  int output = -1;  // kernel output index
  int row = -1;     // else a row value it sets (fused_reduce.cc)
  int slot = -1;    // else a tile buffer
};

struct Program {
  std::vector<Instr> code;
  std::vector<std::pair<int, Operand>> copies;  // outputs that are an input or constant
  int slots = 0;
  // Floats of scratch one thread needs to run this program on tiles of `tile` elements.
  size_t scratchFloats(int64_t tile = kTile) const {
    return (slots + 3 * code.size() + 3 + copies.size()) * static_cast<size_t>(tile);
  }
};

// How a consumer of shape `consumer` (`total` elements) reads tensor `t`, a kernel
// input (`input` >= 0) or a constant: whole (kFull), one value (kScalar) or through
// broadcast strides (kGather). False when it is not float32 or does not broadcast;
// `cast`: a Cast to float32 reads it, so a whole int32/int8/uint8 kernel input is
// taken too (converted as each tile loads).
bool sourceOperand(const ir::Tensor& t, int input, const Shape& consumer, int64_t total, Operand* o, bool cast = false);

// out[i] = float(x[i]) for n values of an int32, int64, int8, uint8 or bool array.
void integersToFloats(DType from, const void* x, int64_t n, float* out);

// An integer or bool tensor read as float32: a kernel input of the whole shape converted
// as each tile loads, one read through broadcast strides converted whole by the kernel, a
// constant converted at compile. False for other dtypes and for other tensors.
bool convertedOperand(const ir::Tensor& t, int input, const Shape& consumer, int64_t total, Operand* o);

// An operand of a comparison (Equal, Less, ...) inside a fused loop, read as float32:
// a float32 operand as sourceOperand reads it; an integer or bool kernel input of the
// whole shape converted as it loads; an integer or bool constant converted at compile.
// False where the comparison could differ from the integer one: an int32/int64 value
// compared in float32 is exact only against a constant below 2^24 in magnitude (float
// rounding is monotonic and keeps such a constant), or against int8/uint8/bool values.
bool compareOperands(const ir::Tensor& a, int a_input, const ir::Tensor& b, int b_input, const Shape& consumer,
                     int64_t total, Operand* oa, Operand* ob);

// An int32 kernel input or constant read as raw int32 bits by an int32 arithmetic op:
// whole, one value or through broadcast strides (copies move the bits unchanged).
bool int32Operand(const ir::Tensor& t, int input, const Shape& consumer, int64_t total, Operand* o);

// The loop of node `n` (one float32 output of `total` elements): an elementwise op, a
// reshape or a Cast to float32 as a copy, Pow by a scalar constant as kPowConst. Sets in->op and in->c and
// returns how many of n.inputs are operands (0: no loop runs this node).
// `compares`: a comparison with a bool output is taken too (its value 1.0f/0.0f; the
// caller reads its operands with compareOperands and keeps it from the outputs), and
// int32 Add/Sub/Mul of two int32 operands (the caller reads them with int32Operand and
// lets only a Cast to float32 read the result).
int instrFor(const std::vector<ir::Tensor>& tensors, const ir::Node& n, int64_t total, Instr* in, bool compares = false);

// Gives every instruction writing neither an output nor a row value a tile buffer;
// a buffer is free again after the last reader of its value. `extra_reads` are
// (instruction, position) pairs: that value is also read after instruction `position`.
void assignSlots(Program& p, const std::vector<std::pair<int, int>>& extra_reads = {});

// Runs a program's instructions on one tile. Row values come from `rows`: rows[k][0]
// for every element when `rows_are_scalars`, else rows[k][0..count) along the tile.
class TileRunner {
 public:
  TileRunner(const Program& p, const std::vector<TensorView>& inputs, const std::vector<MutableTensorView>& outputs,
             float* scratch, const float** results, float* const* rows = nullptr, bool rows_are_scalars = false,
             int64_t tile = kTile)
      : p_(p), inputs_(inputs), outputs_(outputs), scratch_(scratch), results_(results), rows_(rows),
        rows_scalar_(rows_are_scalars), tile_(tile) {}

  // Instructions, then copies, on elements [s, s + n), n <= the tile size. An
  // instruction setting a row value writes rows[k][0..n).
  void run(int64_t s, int64_t n) { runRange(s, n, 0, p_.code.size(), true); }
  // Instructions [begin, end) only (later ranges read earlier results), then the
  // copies if `copies`.
  void runRange(int64_t s, int64_t n, size_t begin, size_t end, bool copies);
  // An operand's values on the tile of the last run() (gather buffers after the program's).
  const float* load(const Operand& o);

 private:
  const float* base(const Operand& o) const {
    return o.constant ? o.constant : o.input >= 0 ? inputs_[o.input].as<float>() : nullptr;
  }
  bool isScalar(const Operand& o) const { return o.kind == Operand::kScalar || (o.kind == Operand::kRow && rows_scalar_); }
  float scalarValue(const Operand& o) const { return o.kind == Operand::kRow ? rows_[o.row][0] : base(o)[0]; }
  // A broadcast operand with one value on the whole tile (a per-channel operand of an
  // NCHW tensor on a tile inside one channel's plane): true, and that value.
  bool tileConstant(const Operand& o, float* value) const;
  float* nextBuffer();  // the next gather buffer, for values other than a per-channel operand's

  const Program& p_;
  const std::vector<TensorView>& inputs_;
  const std::vector<MutableTensorView>& outputs_;
  float* scratch_;
  const float** results_;
  float* const* rows_;
  bool rows_scalar_;
  int64_t tile_;
  int64_t s_ = 0, n_ = 0;
  float* gather_ = nullptr;
  float* gather0_ = nullptr;
  // What the first gather buffers hold when a per-channel operand filled them (the
  // operand, its block's values, the first lane, the count); empty otherwise.
  struct PeriodicFill {
    const Operand* o;
    const float* block;
    int64_t lane, n;
    bool operator==(const PeriodicFill& f) const { return o && o == f.o && block == f.block && lane == f.lane && n == f.n; }
  };
  static constexpr size_t kPeriodicFills = 4;
  PeriodicFill fills_[kPeriodicFills] = {};
};

}  // namespace gkrt::cpu
