#include "backends/cpu/fused_elementwise.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/elementwise_ops.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::cpu {
namespace {

// Where an operand's tile comes from.
struct Operand {
  enum Kind { kTemp, kFull, kScalar, kGather } kind = kTemp;
  int temp = -1;            // kTemp: the instruction whose result it is
  int input = -1;           // kFull/kGather: kernel input index; -1 for a constant
  const float* constant = nullptr;  // constant data (kFull/kGather/kScalar)
  // kGather: broadcast strides (elements) over `dims`, the consumer's output shape.
  std::vector<int64_t> dims, strides;
};

struct Instr {
  EwOp op;
  Operand a, b;
  float c = 0;      // kPowConst exponent
  int output = -1;  // kernel output index, or -1 for a tile buffer
  int slot = -1;    // tile buffer when output < 0
};

struct Program {
  std::vector<Instr> code;
  std::vector<std::pair<int, Operand>> copies;  // outputs that are an input or constant
  int64_t total = 0;
  int slots = 0;
};

bool isScalarConstant(const ir::Tensor& t) { return t.isConstant() && numElements(t.shape) == 1; }

// Builds the program of `nodes` reading `tensors`; `input_of`/`output_of` map a tensor
// to the kernel's input/output index (-1 if none).
struct Builder {
  const std::vector<ir::Tensor>& tensors;
  std::vector<int> input_of, output_of, producer;
  Program p;

  bool operand(int t, const Shape& consumer, Operand* o) {
    const ir::Tensor& tt = tensors[t];
    if (tt.dtype != DType::kFloat32) return false;
    if (producer[t] >= 0) {
      o->kind = Operand::kTemp;
      o->temp = producer[t];
      return true;
    }
    o->input = input_of[t];
    if (o->input < 0 && !tt.isConstant()) return false;
    if (tt.isConstant()) o->constant = reinterpret_cast<const float*>(tt.constant->data);
    if (isScalarConstant(tt)) {
      o->kind = Operand::kScalar;
    } else if (tt.shape == consumer || numElements(tt.shape) == p.total) {
      o->kind = Operand::kFull;  // flat order is the same
    } else {
      if (!broadcastsTo(tt.shape, consumer)) return false;
      o->kind = Operand::kGather;
      o->dims = consumer;
      o->strides = ops::broadcastStrides(tt.shape, consumer);
    }
    return true;
  }

  bool build(const std::vector<ir::Node>& nodes) {
    for (const ir::Node& n : nodes) {
      if (n.outputs.size() != 1 || n.inputs.empty() || n.inputs.size() > 2) return false;
      const ir::Tensor& out = tensors[n.outputs[0]];
      if (out.dtype != DType::kFloat32 || numElements(out.shape) != p.total) return false;
      Instr in;
      const std::string op = n.op->name;
      if (op == "Reshape" || op == "ExpandDims" || op == "Squeeze" || op == "Flatten") {
        if (numElements(tensors[n.inputs[0]].shape) != p.total) return false;
        in.op = EwOp::kCopy;
      } else if (!ewOpFor(n.op->name, static_cast<int>(n.inputs.size()), &in.op)) {
        return false;
      }
      for (int t : n.inputs) if (t < 0) return false;
      if (!operand(n.inputs[0], out.shape, &in.a)) return false;
      if (n.inputs.size() == 2) {
        const ir::Tensor& e = tensors[n.inputs[1]];
        if (in.op == EwOp::kPow && isScalarConstant(e) && e.dtype == DType::kFloat32) {
          in.op = EwOp::kPowConst;
          in.c = *reinterpret_cast<const float*>(e.constant->data);
        } else if (!operand(n.inputs[1], out.shape, &in.b)) {
          return false;
        }
      }
      in.output = output_of[n.outputs[0]];
      producer[n.outputs[0]] = static_cast<int>(p.code.size());
      p.code.push_back(std::move(in));
    }
    return true;
  }

  // Tile buffers: an intermediate's slot is free again after its last reader.
  void assignSlots() {
    std::vector<int> last_use(p.code.size(), -1);
    for (size_t i = 0; i < p.code.size(); ++i) {
      for (const Operand* o : {&p.code[i].a, &p.code[i].b}) {
        if (o->kind == Operand::kTemp && o->temp >= 0) last_use[o->temp] = static_cast<int>(i);
      }
    }
    std::vector<int> free_slots;
    std::vector<int> slot_of(p.code.size(), -1);
    for (size_t i = 0; i < p.code.size(); ++i) {
      Instr& in = p.code[i];
      for (const Operand* o : {&in.a, &in.b}) {  // release slots whose last reader is this instr
        if (o->kind == Operand::kTemp && o->temp >= 0 && last_use[o->temp] == static_cast<int>(i) &&
            slot_of[o->temp] >= 0) {
          free_slots.push_back(slot_of[o->temp]);
          slot_of[o->temp] = -1;
        }
      }
      if (in.output >= 0) continue;
      if (free_slots.empty()) free_slots.push_back(p.slots++);
      in.slot = slot_of[i] = free_slots.back();
      free_slots.pop_back();
    }
  }
};

bool buildProgram(const ir::Graph& g, const ir::Node& node, Program* out) {
  const ir::Graph* body = &g;
  std::vector<ir::Node> single;
  std::vector<int> kernel_inputs, kernel_outputs;
  if (node.subgraph) {
    body = node.subgraph.get();
    kernel_inputs = body->inputs;
    kernel_outputs = body->outputs;
  } else {
    single.push_back(node);
    kernel_inputs = node.inputs;
    kernel_outputs = node.outputs;
  }
  if (kernel_outputs.empty()) return false;
  const Shape& shape = body->tensors[kernel_outputs[0]].shape;
  for (int t : kernel_outputs) if (body->tensors[t].shape != shape) return false;
  Builder b{body->tensors, std::vector<int>(body->tensors.size(), -1), std::vector<int>(body->tensors.size(), -1),
            std::vector<int>(body->tensors.size(), -1), {}};
  b.p.total = numElements(shape);
  for (size_t k = 0; k < kernel_inputs.size(); ++k) if (kernel_inputs[k] >= 0) b.input_of[kernel_inputs[k]] = int(k);
  for (size_t k = 0; k < kernel_outputs.size(); ++k) {
    if (b.output_of[kernel_outputs[k]] >= 0) return false;  // one tensor as two outputs
    b.output_of[kernel_outputs[k]] = static_cast<int>(k);
  }
  if (!b.build(node.subgraph ? body->nodes : single)) return false;
  for (size_t k = 0; k < kernel_outputs.size(); ++k) {  // outputs no instruction writes
    const int t = kernel_outputs[k];
    if (b.producer[t] >= 0) continue;
    Operand o;
    if (!b.operand(t, shape, &o)) return false;
    b.p.copies.push_back({static_cast<int>(k), o});
  }
  b.assignSlots();
  *out = std::move(b.p);
  return true;
}

class ElementwiseKernel final : public Kernel {
 public:
  ElementwiseKernel(Program p, ThreadPool& pool) : p_(std::move(p)), pool_(pool) {
    scratch_.resize(static_cast<size_t>(pool.size()) * (p_.slots + 2 * p_.code.size() + 2 + p_.copies.size()) * kTile);
    results_.resize(static_cast<size_t>(pool.size()) * p_.code.size());  // nothing is allocated in launch
    in_place_ = inPlaceCandidate(p_);
  }

  int inPlaceInput() const override { return in_place_; }

  Status launch(const std::vector<TensorView>& inputs, const std::vector<MutableTensorView>& outputs,
                void*) override {
    const size_t per_thread = (p_.slots + 2 * p_.code.size() + 2 + p_.copies.size()) * kTile;
    pool_.parallelFor(p_.total, kTile, 32 * 1024, [&](int thread, int64_t begin, int64_t end) {
      float* scratch = scratch_.data() + thread * per_thread;
      const float** result = results_.data() + thread * p_.code.size();
      for (int64_t s = begin; s < end; s += kTile) {
        const int64_t n = std::min(kTile, end - s);
        float* gather = scratch + p_.slots * kTile;  // per-operand gather buffers follow the slots
        auto load = [&](const Operand& o) -> const float* {
          const float* base = o.constant ? o.constant : (o.input >= 0 ? inputs[o.input].as<float>() : nullptr);
          switch (o.kind) {
            case Operand::kTemp: return result[o.temp];
            case Operand::kFull: return base + s;
            case Operand::kScalar: {
              float* buf = gather;
              gather += kTile;
              std::fill(buf, buf + n, base[0]);
              return buf;
            }
            case Operand::kGather: {
              float* buf = gather;
              gather += kTile;
              gatherTile(o, base, s, n, buf);
              return buf;
            }
          }
          return nullptr;
        };
        for (size_t i = 0; i < p_.code.size(); ++i) {
          const Instr& in = p_.code[i];
          float* y = in.output >= 0 ? outputs[in.output].as<float>() + s : scratch + in.slot * kTile;
          const bool unary = in.b.kind == Operand::kTemp && in.b.temp < 0;
          // A scalar operand stays a register when the op has a loop for it.
          if (!unary && (in.a.kind == Operand::kScalar) != (in.b.kind == Operand::kScalar)) {
            const bool first = in.a.kind == Operand::kScalar;
            const Operand& so = first ? in.a : in.b;
            const float sv = (so.constant ? so.constant : inputs[so.input].as<float>())[0];
            if (runEwOpScalar(in.op, y, load(first ? in.b : in.a), sv, first, n)) {
              result[i] = y;
              continue;
            }
          }
          const float* a = load(in.a);
          const float* b = unary ? nullptr : load(in.b);
          runEwOp(in.op, y, a, b, n, in.c);
          result[i] = y;
        }
        for (const auto& [k, o] : p_.copies) std::memcpy(outputs[k].as<float>() + s, load(o), n * sizeof(float));
      }
    });
    return Status::Ok();
  }

 private:
  // buf[i] = element (s + i) of the consumer's shape, read through broadcast strides.
  static void gatherTile(const Operand& o, const float* base, int64_t s, int64_t n, float* buf) {
    const size_t r = o.dims.size();
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

  // Output 0 may take the bytes of an input read in place (kFull) when only the last
  // instruction writes it: every earlier read of that tile is done by then, and the
  // op loops read element i before writing element i.
  static bool onlyLastWrites(const Program& p) {
    if (!p.copies.empty() || p.code.empty() || p.code.back().output != 0) return false;
    for (size_t i = 0; i + 1 < p.code.size(); ++i) if (p.code[i].output >= 0) return false;
    return true;
  }
  static int inPlaceCandidate(const Program& p) {
    if (!onlyLastWrites(p)) return -1;
    for (const Instr& in : p.code) {
      for (const Operand* o : {&in.a, &in.b}) if (o->kind == Operand::kFull && o->input >= 0) return o->input;
    }
    return -1;
  }

  Program p_;
  ThreadPool& pool_;
  int in_place_ = -1;
  std::vector<float> scratch_;
  std::vector<const float*> results_;  // per thread: each instruction's tile
};

}  // namespace

bool canRunElementwise(const ir::Graph& g, const ir::Node& node) {
  Program p;
  return buildProgram(g, node, &p);
}

StatusOr<std::unique_ptr<Kernel>> compileElementwise(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  Program p;
  if (!buildProgram(g, node, &p)) {
    return makeError(StatusCode::kInternal, "cpu: ", node.op->name, " is not an elementwise cluster");
  }
  return std::unique_ptr<Kernel>(new ElementwiseKernel(std::move(p), pool));
}

}  // namespace gkrt::cpu
