#include "backends/cpu/fused/tile_program.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::cpu {
namespace {

// A per-channel operand of a channel-blocked tensor ([N, C/B, H, W, B] with H and W
// broadcast): the same B values repeat along each (n, channel block) plane.
bool channelPeriodic(const Operand& o) {
  return o.dims.size() == 5 && o.strides[2] == 0 && o.strides[3] == 0 && (o.dims[4] & (o.dims[4] - 1)) == 0 &&
         o.dims[4] <= 64;
}

// buf[i] = element (s + i) of the consumer's shape, read through broadcast strides.
void gatherTile(const Operand& o, const float* base, int64_t s, int64_t n, float* buf) {
  const size_t r = o.dims.size();
  if (channelPeriodic(o)) {
    const int64_t B = o.dims[4], mask = B - 1, plane = o.dims[2] * o.dims[3] * B, sb = o.strides[4];
    float pattern[2 * 64];  // the block's B values twice: any rotation is B contiguous values
    for (int64_t i = 0; i < n;) {
      const int64_t e = s + i, p = e / plane, within = e % plane;
      const float* blk = base + (p / o.dims[1]) * o.strides[0] + (p % o.dims[1]) * o.strides[1];
      const int64_t run = std::min(n - i, plane - within);
      for (int64_t k = 0; k < B; ++k) pattern[k] = pattern[k + B] = blk[k * sb];
      const float* rotated = pattern + (within & mask);
      float* out = buf + i;
      int64_t j = 0;
      if (B == 8) {
        for (; j + 8 <= run; j += 8) std::memcpy(out + j, rotated, 8 * sizeof(float));
      } else if (B == 16) {
        for (; j + 16 <= run; j += 16) std::memcpy(out + j, rotated, 16 * sizeof(float));
      } else {
        for (; j + B <= run; j += B) std::memcpy(out + j, rotated, B * sizeof(float));
      }
      std::memcpy(out + j, rotated, (run - j) * sizeof(float));
      i += run;
    }
    return;
  }
  int64_t idx[8] = {0};
  if (r > 8) {  // deep shapes: one element at a time
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = s + i, off = 0;
      for (size_t d = r; d-- > 0;) { off += (rem % o.dims[d]) * o.strides[d]; rem /= o.dims[d]; }
      buf[i] = base[off];
    }
    return;
  }
  int64_t rem = s, off = 0;
  for (size_t d = r; d-- > 0;) { idx[d] = rem % o.dims[d]; off += idx[d] * o.strides[d]; rem /= o.dims[d]; }
  const int64_t inner = o.dims[r - 1], inner_stride = o.strides[r - 1];
  int64_t i = 0;
  while (i < n) {  // runs along the innermost dim, then carry
    const int64_t run = std::min(n - i, inner - idx[r - 1]);
    if (inner_stride == 0) std::fill(buf + i, buf + i + run, base[off]);
    else std::memcpy(buf + i, base + off, run * sizeof(float));
    i += run;
    off += run * inner_stride;
    idx[r - 1] += run;
    for (size_t d = r - 1; d > 0 && idx[d] == o.dims[d]; --d) {
      off -= idx[d] * o.strides[d];
      idx[d] = 0;
      ++idx[d - 1];
      off += o.strides[d - 1];
    }
  }
}

template <class T> void convertTile(const T* __restrict x, int64_t n, float* __restrict buf) {
  for (int64_t i = 0; i < n; ++i) buf[i] = static_cast<float>(x[i]);
}

}  // namespace

void integersToFloats(DType from, const void* x, int64_t n, float* out) {
  switch (from) {
    case DType::kInt32: return convertTile(static_cast<const int32_t*>(x), n, out);
    case DType::kInt64: return convertTile(static_cast<const int64_t*>(x), n, out);
    case DType::kInt8: return convertTile(static_cast<const int8_t*>(x), n, out);
    default: return convertTile(static_cast<const uint8_t*>(x), n, out);  // uint8, bool
  }
}

namespace {

bool convertible(DType d) {
  return d == DType::kInt32 || d == DType::kInt64 || d == DType::kInt8 || d == DType::kUInt8 || d == DType::kBool;
}

// The values of an integer or bool constant as float32.
std::shared_ptr<std::vector<float>> constantAsFloat(const ir::Tensor& t) {
  auto v = std::make_shared<std::vector<float>>(static_cast<size_t>(numElements(t.shape)));
  integersToFloats(t.dtype, t.constant->data, int64_t(v->size()), v->data());
  return v;
}

bool wideInt(DType d) { return d == DType::kInt32 || d == DType::kInt64; }

// Every value of the constant below 2^24 in magnitude: exact in float32, and no other
// integer rounds to it.
bool smallConstant(const ir::Tensor& t, const std::vector<float>& v) {
  if (!t.isConstant()) return false;
  for (float x : v) if (!(std::fabs(x) < 16777216.0f)) return false;
  return true;
}

}  // namespace

bool convertedOperand(const ir::Tensor& t, int input, const Shape& consumer, int64_t total, Operand* o) {
  if (!convertible(t.dtype)) return false;
  ir::Tensor as_float;
  as_float.dtype = DType::kFloat32;
  as_float.shape = t.shape;
  if (t.isConstant()) {
    auto values = constantAsFloat(t);
    as_float.constant = t.constant;  // for isConstant(); the data read is `owned`
    if (!sourceOperand(as_float, -1, consumer, total, o)) return false;
    o->owned = values;
    o->constant = values->data();
  } else if (input >= 0 && numElements(t.shape) == total) {
    o->kind = Operand::kFull;
    o->input = input;
    o->from = t.dtype;
  } else if (input >= 0) {  // read through broadcast strides: the kernel converts it whole first
    if (!sourceOperand(as_float, input, consumer, total, o)) return false;
    o->from = t.dtype;
    o->elements = numElements(t.shape);
  } else {
    return false;
  }
  return true;
}

bool compareOperands(const ir::Tensor& a, int a_input, const ir::Tensor& b, int b_input, const Shape& consumer,
                     int64_t total, Operand* oa, Operand* ob) {
  if (a.dtype != b.dtype) return false;
  if (a.dtype == DType::kFloat32) {
    return sourceOperand(a, a_input, consumer, total, oa) && sourceOperand(b, b_input, consumer, total, ob);
  }
  if (!convertedOperand(a, a_input, consumer, total, oa) || !convertedOperand(b, b_input, consumer, total, ob)) return false;
  if (!wideInt(a.dtype)) return true;
  return (ob->owned && smallConstant(b, *ob->owned)) || (oa->owned && smallConstant(a, *oa->owned));
}

bool int32Operand(const ir::Tensor& t, int input, const Shape& consumer, int64_t total, Operand* o) {
  if (t.dtype != DType::kInt32 || (input < 0 && !t.isConstant())) return false;
  ir::Tensor bits;  // the same 4-byte values, placed as float32 operands are
  bits.dtype = DType::kFloat32;
  bits.shape = t.shape;
  bits.constant = t.constant;
  if (!sourceOperand(bits, input, consumer, total, o)) return false;
  o->raw_int32 = true;
  return true;
}

bool sourceOperand(const ir::Tensor& t, int input, const Shape& consumer, int64_t total, Operand* o, bool cast) {
  const bool convert = cast && input >= 0 && numElements(t.shape) == total && convertible(t.dtype);
  if (convert) {
    o->input = input;
    o->kind = Operand::kFull;
    o->from = t.dtype;
    return true;
  }
  if (t.dtype != DType::kFloat32 || (input < 0 && !t.isConstant())) return false;
  o->input = input;
  o->constant = t.isConstant() ? reinterpret_cast<const float*>(t.constant->data) : nullptr;
  if (t.isConstant() && numElements(t.shape) == 1) {
    o->kind = Operand::kScalar;
  } else if (t.shape == consumer || numElements(t.shape) == total) {
    o->kind = Operand::kFull;  // flat order is the same
  } else {
    if (!broadcastsTo(t.shape, consumer)) return false;
    o->kind = Operand::kGather;
    o->dims = consumer;
    o->strides = ops::broadcastStrides(t.shape, consumer);
  }
  return true;
}

int instrFor(const std::vector<ir::Tensor>& tensors, const ir::Node& n, int64_t total, Instr* in, bool compares) {
  if (compares && n.outputs.size() == 1 && n.inputs.size() == 3 && std::string(n.op->name) == "Select" &&
      tensors[n.outputs[0]].dtype == DType::kFloat32 && numElements(tensors[n.outputs[0]].shape) == total) {
    in->op = EwOp::kSelect;  // operands: a, b the values, cond the condition (read by the caller)
    return 3;
  }
  if (n.outputs.size() != 1 || n.inputs.empty() || n.inputs.size() > 2) return 0;
  for (int t : n.inputs) if (t < 0) return 0;
  const ir::Tensor& out = tensors[n.outputs[0]];
  if (compares && out.dtype == DType::kBool && n.inputs.size() == 2 && numElements(out.shape) == total &&
      ewCompareFor(n.op->name, &in->op)) {
    return 2;
  }
  if (compares && out.dtype == DType::kBool && n.inputs.size() == 1 && numElements(out.shape) == total &&
      std::string(n.op->name) == "IsNan" && tensors[n.inputs[0]].dtype == DType::kFloat32) {
    in->op = EwOp::kIsNan;
    return 1;
  }
  if (compares && out.dtype == DType::kInt32 && n.inputs.size() == 2 && numElements(out.shape) == total &&
      tensors[n.inputs[0]].dtype == DType::kInt32 && tensors[n.inputs[1]].dtype == DType::kInt32 &&
      ewInt32For(n.op->name, &in->op)) {
    return 2;
  }
  if (out.dtype != DType::kFloat32 || numElements(out.shape) != total) return 0;
  const std::string op = n.op->name;
  if (op == "Cast") {  // to float32: a copy (of a float tile, or of an integer input converted as it loads)
    in->op = EwOp::kCopy;
    return n.inputs.size() == 1 ? 1 : 0;
  }
  if (op == "Reshape" || op == "ExpandDims" || op == "Squeeze" || op == "Flatten") {
    in->op = EwOp::kCopy;
    return numElements(tensors[n.inputs[0]].shape) == total && n.inputs.size() == 1 ? 1 : 0;
  }
  if (!ewOpFor(n.op->name, static_cast<int>(n.inputs.size()), &in->op)) return 0;
  if (in->op == EwOp::kClip) {
    const auto& a = n.attrs.get<ClipAttrs>();
    in->c = a.min;
    in->c2 = a.max;
  }
  if (in->op == EwOp::kLeakyReLU) in->c = n.attrs.get<AlphaAttrs>().alpha;
  if (in->op == EwOp::kPow) {
    const ir::Tensor& e = tensors[n.inputs[1]];
    if (e.isConstant() && numElements(e.shape) == 1 && e.dtype == DType::kFloat32) {
      in->op = EwOp::kPowConst;
      in->c = *reinterpret_cast<const float*>(e.constant->data);
      return 1;
    }
  }
  return static_cast<int>(n.inputs.size());
}

void assignSlots(Program& p, const std::vector<std::pair<int, int>>& extra_reads) {
  std::vector<int> last_use(p.code.size(), -1);
  for (size_t i = 0; i < p.code.size(); ++i) {
    for (const Operand* o : {&p.code[i].a, &p.code[i].b, &p.code[i].cond}) {
      if (o->kind == Operand::kTemp && o->temp >= 0) last_use[o->temp] = static_cast<int>(i);
    }
  }
  // A value read after instruction `at` stays until the instruction after it.
  for (const auto& [value, at] : extra_reads) last_use[value] = std::max(last_use[value], at + 1);
  std::vector<std::vector<int>> ends_at(p.code.size() + 1);
  for (size_t v = 0; v < p.code.size(); ++v) if (last_use[v] >= 0) ends_at[std::min<size_t>(last_use[v], p.code.size())].push_back(int(v));
  std::vector<int> free_slots;
  std::vector<int> slot_of(p.code.size(), -1);
  for (size_t i = 0; i < p.code.size(); ++i) {
    for (int v : ends_at[i]) {  // values last read by this instruction: their slots are free
      if (slot_of[v] >= 0) free_slots.push_back(slot_of[v]);
      slot_of[v] = -1;
    }
    Instr& in = p.code[i];
    if (in.output >= 0 || in.row >= 0) continue;
    if (free_slots.empty()) free_slots.push_back(p.slots++);
    in.slot = slot_of[i] = free_slots.back();
    free_slots.pop_back();
  }
}

float* TileRunner::nextBuffer() {
  const size_t k = static_cast<size_t>(gather_ - gather0_) / size_t(tile_);
  if (k < kPeriodicFills) fills_[k] = {};  // no longer a per-channel operand's values
  float* buf = gather_;
  gather_ += tile_;
  return buf;
}

const float* TileRunner::load(const Operand& o) {
  switch (o.kind) {
    case Operand::kTemp: return results_[o.temp];
    case Operand::kFull: {
      if (o.raw_int32) return (o.constant ? o.constant : static_cast<const float*>(inputs_[o.input].data)) + s_;
      if (o.from == DType::kFloat32) {
        const float* x = base(o) + s_;
        for (int64_t i = 0; i < n_; i += 16) __builtin_prefetch(x + 2 * n_ + i);  // two tiles on
        return x;
      }
      float* buf = nextBuffer();
      integersToFloats(o.from, static_cast<const char*>(inputs_[o.input].data) + s_ * int64_t(dtypeSize(o.from)), n_, buf);
      return buf;
    }
    case Operand::kRow:
      if (!rows_scalar_) return rows_[o.row];
      [[fallthrough]];
    case Operand::kScalar: {
      float* buf = nextBuffer();
      std::fill(buf, buf + n_, scalarValue(o));
      return buf;
    }
    case Operand::kGather: {
      const size_t k = static_cast<size_t>(gather_ - gather0_) / size_t(tile_);
      float* buf = gather_;
      gather_ += tile_;
      // A per-channel operand of a blocked tensor fills the same buffer on each tile of a
      // (n, channel block) plane that starts at the same lane: filled once per plane.
      PeriodicFill fill{};
      if (k < kPeriodicFills && channelPeriodic(o)) {
        const int64_t B = o.dims[4], plane = o.dims[2] * o.dims[3] * B, p = s_ / plane;
        if ((s_ + n_ - 1) / plane == p) {
          fill = {&o, base(o) + (p / o.dims[1]) * o.strides[0] + (p % o.dims[1]) * o.strides[1], s_ & (B - 1), n_};
          if (fill == fills_[k]) return buf;
        }
      }
      gatherTile(o, base(o), s_, n_, buf);
      if (k < kPeriodicFills) fills_[k] = fill;
      return buf;
    }
  }
  return nullptr;
}

bool TileRunner::tileConstant(const Operand& o, float* value) const {
  if (o.kind != Operand::kGather) return false;
  size_t j = o.dims.size();
  int64_t inner = 1;  // the broadcast trailing dims' elements
  while (j > 0 && o.strides[j - 1] == 0) inner *= o.dims[--j];
  if (inner <= 1 || s_ / inner != (s_ + n_ - 1) / inner) return false;
  int64_t rem = s_ / inner, off = 0;
  for (size_t d = j; d-- > 0;) {
    off += (rem % o.dims[d]) * o.strides[d];
    rem /= o.dims[d];
  }
  *value = base(o)[off];
  return true;
}

void TileRunner::runRange(int64_t s, int64_t n, size_t begin, size_t end, bool copies) {
  s_ = s;
  n_ = n;
  gather_ = gather0_ = scratch_ + p_.slots * tile_;  // per-operand gather buffers follow the slots
  for (size_t i = begin; i < end; ++i) {
    const Instr& in = p_.code[i];
    float* y = in.output >= 0 ? outputs_[in.output].as<float>() + s
               : in.row >= 0  ? rows_[in.row]
                              : scratch_ + in.slot * tile_;
    results_[i] = y;
    if (in.op == EwOp::kSelect) {
      const float* cond = load(in.cond);
      const float* a = load(in.a);
      runSelect(y, cond, a, load(in.b), n);
      continue;
    }
    const bool unary = in.b.kind == Operand::kTemp && in.b.temp < 0;
    // A scalar operand stays a register when the op has a loop for it.
    if (!unary && isScalar(in.a) != isScalar(in.b)) {
      const bool first = isScalar(in.a);
      if (runEwOpScalar(in.op, y, load(first ? in.b : in.a), scalarValue(first ? in.a : in.b), first, n)) continue;
    }
    // So does a broadcast operand with one value on this tile (per-channel scales and
    // offsets of NCHW tensors), its gather buffer left unfilled in its usual turn.
    float c = 0.0f;
    if (!unary && !isScalar(in.a) && !isScalar(in.b) && ewOpHasScalarLoop(in.op) &&
        (tileConstant(in.b, &c) || tileConstant(in.a, &c))) {
      const bool first = !tileConstant(in.b, &c);
      if (first) gather_ += tile_;  // a's buffer, unfilled; b's load takes the next as before
      const float* v = load(first ? in.b : in.a);
      if (!first) gather_ += tile_;
      runEwOpScalar(in.op, y, v, c, first, n);
      continue;
    }
    const float* a = load(in.a);
    const float* b = unary ? nullptr : load(in.b);
    runEwOp(in.op, y, a, b, n, in.c, in.c2);
  }
  if (!copies) return;
  for (const auto& [k, o] : p_.copies) std::memcpy(outputs_[k].as<float>() + s, load(o), n * sizeof(float));
}

}  // namespace gkrt::cpu
