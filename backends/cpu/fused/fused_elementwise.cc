#include "backends/cpu/fused/fused_elementwise.h"

#include <algorithm>
#include <string>

#include "backends/cpu/layout/blocked_layout.h"
#include "backends/cpu/fused/tile_program.h"
#include "runtime/ir/op_def.h"

namespace gkrt::cpu {
namespace {

// A node of the cluster on a much smaller shape than the outputs whose operands are
// kernel inputs, constants or earlier steps (the per-channel scale x_scale * w_scale of
// a dynamically quantized layer): run once per launch by its reference kernel; its
// result is read by the tiled loops as one more kernel input, through broadcast strides.
struct PrologueStep {
  ir::Node node;
  std::vector<TensorView> in;  // constants filled in; the others from `source` at launch
  std::vector<int> source;     // per input: kernel input (or earlier step: inputs + k) index, -1 none
  std::vector<float> result;
  Shape shape;
};

// The program of an elementwise cluster: every value has the outputs' shape (inputs
// broadcast to it), so one tile of each is the same flat range.
struct ElementwiseProgram {
  Program p;
  int64_t total = 0;
  std::vector<PrologueStep> prologue;
  size_t num_inputs = 0;  // the kernel's inputs (prologue results are read after them)
  std::vector<std::pair<size_t, int>> prologue_outputs;  // (step, kernel output) copied out at launch
};

// At most this share of the outputs' size for a prologue step (it runs unvectorised);
// a step whose value is itself a kernel output of a smaller shape (a mask's Select that
// later layers read too, beside its Add to the scores) at most half: it is computed once
// either way.
constexpr int64_t kPrologueRatio = 16;
constexpr int64_t kOutputPrologueRatio = 2;

bool prologueStep(const std::vector<ir::Tensor>& tensors, const ir::Node& n, int64_t total, const std::vector<int>& input_of,
                  const std::vector<int>& output_of, PrologueStep* st) {
  // Any elementwise op (Select included): a step runs its reference kernel.
  if (n.outputs.size() != 1 || !n.op || !n.op->reference || n.op->op_class != OpClass::kElementwise) return false;
  const ir::Tensor& y = tensors[n.outputs[0]];
  const bool is_output = output_of[n.outputs[0]] >= 0;
  if (y.dtype != DType::kFloat32 || numElements(y.shape) * (is_output ? kOutputPrologueRatio : kPrologueRatio) > total) return false;
  for (int t : n.inputs) {
    if (t < 0 || !(input_of[t] >= 0 || tensors[t].isConstant())) return false;
    TensorView v;
    v.dtype = tensors[t].dtype;
    v.shape = tensors[t].shape;
    if (tensors[t].isConstant()) v.data = tensors[t].constant->data;
    st->in.push_back(v);
    st->source.push_back(tensors[t].isConstant() ? -1 : input_of[t]);
  }
  st->node = n;
  st->shape = y.shape;
  st->result.resize(numElements(y.shape));
  return true;
}

bool buildProgram(const ir::Graph& g, const ir::Node& node, ElementwiseProgram* out) {
  const ir::Graph* body = node.subgraph ? node.subgraph.get() : &g;
  const std::vector<ir::Node> single = node.subgraph ? std::vector<ir::Node>{} : std::vector<ir::Node>{node};
  const std::vector<ir::Node>& nodes = node.subgraph ? body->nodes : single;
  const std::vector<int>& kernel_inputs = node.subgraph ? body->inputs : node.inputs;
  const std::vector<int>& kernel_outputs = node.subgraph ? body->outputs : node.outputs;
  const std::vector<ir::Tensor>& tensors = body->tensors;
  if (kernel_outputs.empty()) return false;
  // The loop runs over the largest output; a smaller one must come from a prologue step.
  int largest = kernel_outputs[0];
  for (int t : kernel_outputs) if (numElements(tensors[t].shape) > numElements(tensors[largest].shape)) largest = t;
  const Shape& shape = tensors[largest].shape;
  const int64_t total = numElements(shape);
  std::vector<int> input_of(tensors.size(), -1), output_of(tensors.size(), -1), producer(tensors.size(), -1);
  std::vector<char> int_value(tensors.size(), 0);  // an int32 step's result, held as its float32
  for (size_t k = 0; k < kernel_inputs.size(); ++k) if (kernel_inputs[k] >= 0) input_of[kernel_inputs[k]] = int(k);
  for (size_t k = 0; k < kernel_outputs.size(); ++k) {
    if (output_of[kernel_outputs[k]] >= 0) return false;  // one tensor as two outputs
    output_of[kernel_outputs[k]] = static_cast<int>(k);
  }
  auto operand = [&](int t, const Shape& consumer, Operand* o, bool cast = false) {
    if (producer[t] < 0) return sourceOperand(tensors[t], input_of[t], consumer, total, o, cast);
    o->kind = Operand::kTemp;
    o->temp = producer[t];
    return true;
  };
  Program p;
  const int num_inputs = static_cast<int>(kernel_inputs.size());
  out->num_inputs = kernel_inputs.size();
  for (const ir::Node& n : nodes) {
    PrologueStep st;
    if (prologueStep(tensors, n, total, input_of, output_of, &st)) {
      if (output_of[n.outputs[0]] >= 0) out->prologue_outputs.emplace_back(out->prologue.size(), output_of[n.outputs[0]]);
      input_of[n.outputs[0]] = num_inputs + static_cast<int>(out->prologue.size());
      out->prologue.push_back(std::move(st));
      continue;
    }
    Instr in;
    const int operands = instrFor(tensors, n, total, &in, true);
    if (operands == 0) return false;
    const Shape& consumer = tensors[n.outputs[0]].shape;
    // The float32 of an int32 step's value is exact only for a Cast to float32 to read.
    for (int t : n.inputs) {
      if (t >= 0 && int_value[t] && !(std::string(n.op->name) == "Cast" && tensors[n.outputs[0]].dtype == DType::kFloat32)) {
        return false;
      }
    }
    if (tensors[n.outputs[0]].dtype == DType::kInt32) {  // int32 Add/Sub/Mul of int32 inputs and constants
      if (output_of[n.outputs[0]] >= 0 || producer[n.inputs[0]] >= 0 || producer[n.inputs[1]] >= 0) return false;
      for (int k = 0; k < 2; ++k) {
        const int t = n.inputs[k];
        if (!int32Operand(tensors[t], input_of[t], consumer, total, k == 0 ? &in.a : &in.b)) return false;
      }
      int_value[n.outputs[0]] = 1;
    } else if (in.op == EwOp::kSelect) {  // Select(cond, a, b): the condition as 0/1 floats
      const int c = n.inputs[0];
      if (producer[c] >= 0) {
        if (!operand(c, consumer, &in.cond)) return false;
      } else if (!convertedOperand(tensors[c], input_of[c], consumer, total, &in.cond)) {
        return false;
      }
      if (!operand(n.inputs[1], consumer, &in.a) || !operand(n.inputs[2], consumer, &in.b)) return false;
    } else if (in.op == EwOp::kIsNan) {  // its 0/1 value stays inside the loop
      if (output_of[n.outputs[0]] >= 0 || !operand(n.inputs[0], consumer, &in.a)) return false;
    } else if (tensors[n.outputs[0]].dtype == DType::kBool) {  // a comparison: its 0/1 value stays inside the loop
      if (output_of[n.outputs[0]] >= 0) return false;
      const int a = n.inputs[0], b = n.inputs[1];
      if (producer[a] >= 0 || producer[b] >= 0) {  // a float32 step's result, or a bool (0/1) one
        if (!operand(a, consumer, &in.a) || !operand(b, consumer, &in.b)) return false;
      } else if (!compareOperands(tensors[a], input_of[a], tensors[b], input_of[b], consumer, total, &in.a, &in.b)) {
        return false;
      }
    } else {
      if (!operand(n.inputs[0], consumer, &in.a, std::string(n.op->name) == "Cast")) return false;
      if (operands == 2 && !operand(n.inputs[1], consumer, &in.b)) return false;
    }
    in.output = output_of[n.outputs[0]];
    if (in.output >= 0 && tensors[n.outputs[0]].shape != shape) return false;  // the loop writes whole outputs only
    producer[n.outputs[0]] = static_cast<int>(p.code.size());
    p.code.push_back(std::move(in));
  }
  for (size_t k = 0; k < kernel_outputs.size(); ++k) {  // outputs no instruction writes
    const int t = kernel_outputs[k];
    if (producer[t] >= 0) continue;
    bool from_prologue = false;
    for (const auto& po : out->prologue_outputs) from_prologue = from_prologue || po.second == static_cast<int>(k);
    if (from_prologue) continue;
    if (tensors[t].shape != shape) return false;
    Operand o;
    if (!operand(t, shape, &o)) return false;
    p.copies.push_back({static_cast<int>(k), o});
  }
  assignSlots(p);
  out->p = std::move(p);
  out->total = total;
  return true;
}

class ElementwiseKernel final : public Kernel {
 public:
  ElementwiseKernel(ElementwiseProgram p, ThreadPool& pool)
      : p_(std::move(p.p)), total_(p.total), prologue_(std::move(p.prologue)),
        prologue_outputs_(std::move(p.prologue_outputs)), pool_(pool) {
    // Integer inputs read through broadcast strides: converted to float32 whole at launch,
    // then read as float32 inputs.
    for (Instr& in : p_.code) {
      for (Operand* o : {&in.a, &in.b, &in.cond}) {
        if (o->kind != Operand::kGather || o->from == DType::kFloat32 || o->input < 0) continue;
        bool seen = false;
        for (const Converted& c : converted_) seen = seen || c.input == o->input;
        if (!seen) converted_.push_back({o->input, o->from, std::vector<float>(size_t(o->elements))});
        o->from = DType::kFloat32;
      }
    }
    if (!prologue_.empty() || !converted_.empty()) all_inputs_.resize(p.num_inputs + prologue_.size());  // launch allocates nothing
    for (PrologueStep& st : prologue_) {
      MutableTensorView y;
      y.shape = st.shape;
      y.data = st.result.data();
      prologue_out_.push_back({y});
    }
    scratch_stride_ = threadStride(size_t(p_.scratchFloats()), sizeof(float));
    results_stride_ = threadStride(p_.code.size(), sizeof(const float*));
    scratch_.resize(static_cast<size_t>(pool.size()) * scratch_stride_);
    results_.resize(static_cast<size_t>(pool.size()) * results_stride_);  // nothing is allocated in launch
    in_place_ = inPlaceCandidate(p_);
  }

  int inPlaceInput() const override { return in_place_; }
  // Empty for a plain cluster (as before); names what is special otherwise.
  std::string detail() const override {
    int converted = 0;
    for (const Instr& in : p_.code) converted += in.a.kind == Operand::kFull && in.a.from != DType::kFloat32;
    std::string d;
    if (!prologue_.empty()) d = "fused loop, " + std::to_string(prologue_.size()) + " small op(s) run first";
    if (converted > 0) d += (d.empty() ? "fused loop, " : ", ") + std::to_string(converted) + " integer input(s) cast on load";
    return d;
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& outputs, void*) override {
    const std::vector<TensorView>* inputs = &in;
    if (!prologue_.empty() || !converted_.empty()) {  // the kernel inputs, then each step's result
      std::copy(in.begin(), in.end(), all_inputs_.begin());
      for (Converted& c : converted_) {
        integersToFloats(c.from, in[c.input].data, int64_t(c.values.size()), c.values.data());
        all_inputs_[c.input].data = c.values.data();
        all_inputs_[c.input].dtype = DType::kFloat32;
      }
      for (size_t k = 0; k < prologue_.size(); ++k) {
        PrologueStep& st = prologue_[k];
        for (size_t i = 0; i < st.in.size(); ++i) if (st.source[i] >= 0) st.in[i].data = all_inputs_[st.source[i]].data;
        RETURN_IF_ERROR(st.node.op->reference(KernelContext{st.node, st.in, prologue_out_[k]}));
        TensorView& r = all_inputs_[in.size() + k];
        r.shape = st.shape;
        r.data = st.result.data();
      }
      for (const auto& [step, k] : prologue_outputs_) {
        const std::vector<float>& v = prologue_[step].result;
        std::copy(v.begin(), v.end(), static_cast<float*>(outputs[size_t(k)].data));
      }
      inputs = &all_inputs_;
    }
    pool_.parallelFor(total_, kTile, 32 * 1024, [&](int thread, int64_t begin, int64_t end) {
      TileRunner runner(p_, *inputs, outputs, scratch_.data() + thread * scratch_stride_,
                        results_.data() + thread * results_stride_);
      for (int64_t s = begin; s < end; s += kTile) runner.run(s, std::min(kTile, end - s));
    });
    return Status::Ok();
  }

 private:
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
      for (const Operand* o : {&in.a, &in.b, &in.cond}) {
        if (o->kind == Operand::kFull && o->input >= 0 && o->from == DType::kFloat32 && !o->raw_int32) return o->input;
      }
    }
    return -1;
  }

  struct Converted {
    int input;
    DType from;
    std::vector<float> values;
  };

  Program p_;
  int64_t total_;
  std::vector<Converted> converted_;
  std::vector<PrologueStep> prologue_;
  std::vector<std::pair<size_t, int>> prologue_outputs_;  // (step, kernel output): copied out after the steps
  std::vector<std::vector<MutableTensorView>> prologue_out_;
  std::vector<TensorView> all_inputs_;
  ThreadPool& pool_;
  int in_place_ = -1;
  size_t scratch_stride_ = 0, results_stride_ = 0;  // per thread (threadStride)
  std::vector<float> scratch_;
  std::vector<const float*> results_;  // per thread: each instruction's tile
};

}  // namespace

bool canRunElementwise(const ir::Graph& g, const ir::Node& node) {
  ElementwiseProgram p;
  return buildProgram(g, node, &p);
}

bool elementwiseTakesBlocked(const ir::Graph& g, const ir::Node& node) {
  const ir::Graph* body = node.subgraph ? node.subgraph.get() : &g;
  const std::vector<int>& ins = node.subgraph ? body->inputs : node.inputs;
  const std::vector<int>& outs = node.subgraph ? body->outputs : node.outputs;
  if (outs.empty()) return false;
  const Shape& y = body->tensors[outs[0]].shape;
  if (y.size() != 4) return false;
  for (int t : outs) if (body->tensors[t].shape != y) return false;  // (a smaller prologue output stays plain)
  if (node.subgraph) {  // smaller ones are prologue steps on plain broadcast operands (their results read as such)
    for (const ir::Node& n : body->nodes) {
      const Shape& s = body->tensors[n.outputs[0]].shape;
      if (s != y && numElements(s) >= numElements(y)) return false;
    }
  }
  for (int t : ins) {
    if (t >= 0 && body->tensors[t].shape != y && numElements(body->tensors[t].shape) >= numElements(y)) return false;
  }
  return true;
}

StatusOr<std::unique_ptr<Kernel>> compileElementwise(const ir::Graph& g, const ir::Node& node, ThreadPool& pool,
                                                     int block) {
  ElementwiseProgram p;
  if (!buildProgram(g, node, &p)) {
    return makeError(StatusCode::kInternal, "cpu: ", node.op->name, " is not an elementwise cluster");
  }
  if (block > 0) {  // broadcast operands: plain, read at each element of the blocked view
    auto reblock = [&](Operand& o) {
      if (o.kind != Operand::kGather) return true;
      if (o.dims.size() != 4) return false;
      Shape dims;
      std::vector<int64_t> strides;
      blockedBroadcast(o.dims, o.strides, block, &dims, &strides);
      o.dims = dims;
      o.strides = strides;
      return true;
    };
    bool ok = true;
    for (Instr& in : p.p.code) ok = ok && reblock(in.a) && reblock(in.b) && reblock(in.cond);
    for (auto& c : p.p.copies) ok = ok && reblock(c.second);
    if (!ok) return makeError(StatusCode::kInternal, "cpu: ", node.name, " has a broadcast operand that is not 4-D");
  }
  return std::unique_ptr<Kernel>(new ElementwiseKernel(std::move(p), pool));
}

}  // namespace gkrt::cpu
