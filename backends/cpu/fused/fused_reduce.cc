#include "backends/cpu/fused/fused_reduce.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "backends/cpu/fused/tile_program.h"
#include "backends/reduce_layout.h"
#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::cpu {
namespace {

enum class Reduction { kSum, kMean, kMax, kMin, kProd };

bool reductionFor(const ir::Node& n, Reduction* r) {
  static const struct { const char* name; Reduction r; } kOps[] = {
      {"ReduceSum", Reduction::kSum}, {"ReduceMean", Reduction::kMean}, {"ReduceMax", Reduction::kMax},
      {"ReduceMin", Reduction::kMin}, {"ReduceProd", Reduction::kProd}};
  for (const auto& e : kOps) {
    if (n.op && std::strcmp(n.op->name, e.name) == 0) {
      *r = e.r;
      return true;
    }
  }
  return false;
}

float initialValue(Reduction r) {
  switch (r) {
    case Reduction::kMax: return -std::numeric_limits<float>::infinity();
    case Reduction::kMin: return std::numeric_limits<float>::infinity();
    case Reduction::kProd: return 1.0f;
    default: return 0.0f;
  }
}

// acc <- acc (+) v for each reduction, NaN winning Max/Min as in the reference; on
// floats and on 16-float vectors (GCC/Clang vector extensions: SIMD registers where the
// target has them, scalar code elsewhere).
typedef float Lanes __attribute__((vector_size(16)));
template <Reduction R, class T> inline T combine(T acc, T v) {
  if constexpr (R == Reduction::kMax) return ((v != v) | (v > acc)) ? v : acc;
  if constexpr (R == Reduction::kMin) return ((v != v) | (v < acc)) ? v : acc;
  if constexpr (R == Reduction::kProd) return acc * v;
  return acc + v;
}

// Accumulates `kr` rows of `w` values: acc[i] (+)= v[r * w + i]. With w == 1 the values
// go round 16 lanes (a vectorisable sum of one row), folded into acc[0] by finish().
struct Accumulator {
  static constexpr int kLanes = 16;
  Reduction kind;
  float lanes[kLanes];

  template <Reduction R> void addT(float* acc, const float* v, int64_t kr, int64_t w) {
    if (w == 1) {
      Lanes l[4], x[4];  // four independent 4-float chains: 16 lanes
      std::memcpy(l, lanes, sizeof(l));
      int64_t i = 0;
      for (; i + kLanes <= kr; i += kLanes) {
        std::memcpy(x, v + i, sizeof(x));
        for (int j = 0; j < 4; ++j) l[j] = combine<R>(l[j], x[j]);
      }
      std::memcpy(lanes, l, sizeof(l));
      for (int j = 0; i < kr; ++i, ++j) lanes[j] = combine<R>(lanes[j], v[i]);
      return;
    }
    for (int64_t r = 0; r < kr; ++r)
      for (int64_t i = 0; i < w; ++i) acc[i] = combine<R>(acc[i], v[r * w + i]);
  }
  template <Reduction R> void finishT(float* acc, int64_t w) {
    if (w == 1) for (float l : lanes) acc[0] = combine<R>(acc[0], l);
  }

  void start(float* acc, int64_t w) {
    std::fill(lanes, lanes + kLanes, initialValue(kind));
    std::fill(acc, acc + w, initialValue(kind));
  }
  void add(float* acc, const float* v, int64_t kr, int64_t w) {
    switch (kind) {
      case Reduction::kMax: return addT<Reduction::kMax>(acc, v, kr, w);
      case Reduction::kMin: return addT<Reduction::kMin>(acc, v, kr, w);
      case Reduction::kProd: return addT<Reduction::kProd>(acc, v, kr, w);
      default: return addT<Reduction::kSum>(acc, v, kr, w);
    }
  }
  void finish(float* acc, int64_t w, int64_t extent) {
    switch (kind) {
      case Reduction::kMax: finishT<Reduction::kMax>(acc, w); break;
      case Reduction::kMin: finishT<Reduction::kMin>(acc, w); break;
      case Reduction::kProd: finishT<Reduction::kProd>(acc, w); break;
      default: finishT<Reduction::kSum>(acc, w); break;
    }
    if (kind == Reduction::kMean) for (int64_t i = 0; i < w; ++i) acc[i] /= static_cast<float>(extent);
  }
};

struct ReduceStep {
  Reduction kind;
  Operand input;  // read on its pass's tiles
  int row;        // the row value it sets
};

struct ReducePlan {
  ReduceLayout layout;
  int num_rows = 0;
  std::vector<ReduceStep> steps;
  std::vector<Program> passes;      // passes[k] feeds steps[k]; the last writes full-shape outputs
  std::vector<Program> row_phases;  // row_phases[0] first, row_phases[k + 1] after steps[k]
  // The same cluster with every full-shape instruction once, for rows short enough to
  // keep all their live values (reductions along the last axis): steps[k] reads
  // slab_inputs[k] once instructions [0, slab_ends[k]) have run.
  Program slab;
  std::vector<size_t> slab_ends;
  std::vector<Operand> slab_inputs;
  size_t scratch = 0, results = 0;          // per thread, passes
  size_t row_scratch = 0, row_results = 0;  // per thread, row phases
};

// Sorts a cluster's values into full-shape ones (the reductions' input shape, or any
// shape of as many elements, in the same flat order) and row values (one per row).
class PlanBuilder {
 public:
  PlanBuilder(const std::vector<ir::Tensor>& tensors, const std::vector<int>& inputs, const std::vector<int>& outputs)
      : tensors_(tensors), outputs_(outputs), input_of_(tensors.size(), -1), output_of_(tensors.size(), -1),
        full_of_(tensors.size(), -1), row_of_(tensors.size(), -1) {
    for (size_t k = 0; k < inputs.size(); ++k) if (inputs[k] >= 0) input_of_[inputs[k]] = static_cast<int>(k);
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (outputs[k] < 0) continue;
      if (output_of_[outputs[k]] >= 0) twice_ = true;  // one tensor as two outputs
      output_of_[outputs[k]] = static_cast<int>(k);
    }
  }

  bool build(const std::vector<const ir::Node*>& nodes, ReducePlan* plan) {
    if (twice_ || !findLayout(nodes)) return false;
    for (const ir::Node* n : nodes) if (!add(*n)) return false;
    for (size_t k = 0; k < outputs_.size(); ++k) if (!addOutput(static_cast<int>(k))) return false;
    plan->layout = layout_;
    plan->num_rows = num_rows_;
    std::vector<Operand> written;
    for (const Instr& in : full_) if (in.output >= 0) written.push_back(Operand{Operand::kTemp, int(&in - full_.data())});
    std::vector<int> slab_index(full_.size(), -1);
    std::vector<std::pair<int, int>> slab_reads;
    for (size_t k = 0; k < steps_.size(); ++k) {
      std::vector<int> index(full_.size(), -1);
      plan->passes.emplace_back();
      append({steps_[k].input}, false, &plan->passes.back(), &index);
      append({steps_[k].input}, true, &plan->slab, &slab_index);
      plan->slab_ends.push_back(plan->slab.code.size());
      plan->slab_inputs.push_back(renumbered(steps_[k].input, slab_index));
      if (plan->slab_inputs.back().kind == Operand::kTemp) slab_reads.push_back({plan->slab_inputs.back().temp, int(plan->slab.code.size()) - 1});
      plan->steps.push_back(steps_[k]);
      plan->steps.back().input = renumbered(steps_[k].input, index);
    }
    std::vector<int> index(full_.size(), -1);
    plan->passes.emplace_back();
    append(written, true, &plan->passes.back(), &index);
    append(written, true, &plan->slab, &slab_index);
    plan->passes.back().copies = plan->slab.copies = final_copies_;
    plan->row_phases = std::move(row_phases_);
    for (Program& p : plan->passes) {
      assignSlots(p);
      plan->scratch = std::max(plan->scratch, p.scratchFloats());
      plan->results = std::max(plan->results, p.code.size());
    }
    assignSlots(plan->slab, slab_reads);
    for (Program& p : plan->row_phases) {
      assignSlots(p);
      plan->row_scratch = std::max(plan->row_scratch, p.scratchFloats());
      plan->row_results = std::max(plan->row_results, p.code.size());
    }
    return true;
  }

 private:
  // Every reduction reduces one block of axes of one float32 shape.
  bool findLayout(const std::vector<const ir::Node*>& nodes) {
    bool found = false;
    for (const ir::Node* n : nodes) {
      Reduction r;
      if (!reductionFor(*n, &r)) continue;
      if (n->inputs.size() != 1 || n->outputs.size() != 1 || n->inputs[0] < 0) return false;
      const ir::Tensor &x = tensors_[n->inputs[0]], &y = tensors_[n->outputs[0]];
      if (x.dtype != DType::kFloat32 || y.dtype != DType::kFloat32) return false;
      auto axes = ops::reduceAxes(n->attrs.get<AxesAttrs>().axes, static_cast<int64_t>(x.shape.size()));
      if (!axes.ok()) return false;
      std::vector<char> mask(x.shape.size(), 0);
      for (int64_t a : *axes) mask[a] = 1;
      if (!found) layout_ = ReduceLayout(x.shape, mask);
      else if (x.shape != layout_.shape() || mask != layout_.reduced()) return false;
      found = true;
    }
    return found && layout_.contiguous() && layout_.total() > 0;
  }

  bool fullOperand(int t, const Shape& consumer, Operand* o) {
    if (full_of_[t] >= 0) {
      o->kind = Operand::kTemp;
      o->temp = full_of_[t];
      return true;
    }
    if (row_of_[t] >= 0) {  // a row value broadcast back over its row
      if (!layout_.isFullShaped(consumer) || !layout_.broadcastsAsRow(tensors_[t].shape)) return false;
      o->kind = Operand::kRow;
      o->row = row_of_[t];
      return true;
    }
    return sourceOperand(tensors_[t], input_of_[t], consumer, layout_.total(), o);
  }

  bool rowOperand(int t, const Shape& consumer, Operand* o, int* phase) {
    if (full_of_[t] >= 0) return false;
    if (row_of_[t] >= 0) {
      o->kind = Operand::kRow;
      o->row = row_of_[t];
      *phase = std::max(*phase, row_phase_[row_of_[t]]);
      return true;
    }
    return sourceOperand(tensors_[t], input_of_[t], consumer, layout_.rows(), o);
  }

  int newRow(int t, int phase) {
    row_of_[t] = num_rows_;
    row_phase_.push_back(phase);
    if (output_of_[t] >= 0) phaseProgram(phase).copies.push_back({output_of_[t], Operand{Operand::kRow, -1, -1, nullptr, num_rows_}});
    return num_rows_++;
  }
  Program& phaseProgram(int phase) {
    if (row_phases_.size() <= static_cast<size_t>(phase)) row_phases_.resize(phase + 1);
    return row_phases_[phase];
  }

  bool add(const ir::Node& n) {
    Reduction kind;
    const bool reduction = reductionFor(n, &kind);
    if (reduction && layout_.extent() > 1) {
      ReduceStep step{kind, {}, -1};
      if (!fullOperand(n.inputs[0], layout_.shape(), &step.input)) return false;
      step.row = newRow(n.outputs[0], static_cast<int>(steps_.size()) + 1);
      steps_.push_back(step);
      return true;
    }
    Instr in;
    in.op = EwOp::kCopy;  // a reduction of one element per row copies it
    int operands = reduction ? 1 : instrFor(tensors_, n, layout_.total(), &in);
    const Shape& shape = tensors_[n.outputs[0]].shape;
    if (operands) {  // a full-shape op
      if (!fullOperand(n.inputs[0], shape, &in.a)) return false;
      if (operands == 2 && !fullOperand(n.inputs[1], shape, &in.b)) return false;
      in.output = output_of_[n.outputs[0]];
      full_of_[n.outputs[0]] = static_cast<int>(full_.size());
      full_.push_back(std::move(in));
      return true;
    }
    operands = instrFor(tensors_, n, layout_.rows(), &in);
    if (!operands || !layout_.isRowShaped(shape)) return false;
    int phase = 0;
    if (!rowOperand(n.inputs[0], shape, &in.a, &phase)) return false;
    if (operands == 2 && !rowOperand(n.inputs[1], shape, &in.b, &phase)) return false;
    in.row = newRow(n.outputs[0], phase);
    phaseProgram(phase).code.push_back(std::move(in));
    return true;
  }

  // Outputs no full-shape instruction writes: row values are copied by their phase;
  // an input or constant passed through, by the last pass.
  bool addOutput(int k) {
    const int t = outputs_[k];
    if (t < 0 || full_of_[t] >= 0 || row_of_[t] >= 0) return t >= 0;
    Operand o;
    if (!sourceOperand(tensors_[t], input_of_[t], layout_.shape(), layout_.total(), &o)) return false;
    final_copies_.push_back({k, o});
    return true;
  }

  // Appends to `p` the full-shape instructions `roots` need that it lacks, in order;
  // index[i]: where full_[i] is in `p` (-1: not there).
  void append(const std::vector<Operand>& roots, bool writes_outputs, Program* p, std::vector<int>* index) {
    std::vector<char> need(full_.size(), 0);
    std::vector<int> stack;
    for (const Operand& o : roots) if (o.kind == Operand::kTemp && o.temp >= 0) stack.push_back(o.temp);
    while (!stack.empty()) {
      const int i = stack.back();
      stack.pop_back();
      if (need[i] || (*index)[i] >= 0) continue;
      need[i] = 1;
      for (const Operand* o : {&full_[i].a, &full_[i].b}) if (o->kind == Operand::kTemp && o->temp >= 0) stack.push_back(o->temp);
    }
    for (size_t i = 0; i < full_.size(); ++i) {
      if (!need[i]) continue;
      Instr in = full_[i];
      in.a = renumbered(in.a, *index);
      in.b = renumbered(in.b, *index);
      if (!writes_outputs) in.output = -1;
      (*index)[i] = static_cast<int>(p->code.size());
      p->code.push_back(std::move(in));
    }
  }
  static Operand renumbered(Operand o, const std::vector<int>& index) {
    if (o.kind == Operand::kTemp && o.temp >= 0) o.temp = index[o.temp];
    return o;
  }

  const std::vector<ir::Tensor>& tensors_;
  const std::vector<int>& outputs_;
  std::vector<int> input_of_, output_of_, full_of_, row_of_;
  ReduceLayout layout_;
  std::vector<Instr> full_;
  std::vector<ReduceStep> steps_;
  std::vector<int> row_phase_;
  std::vector<Program> row_phases_;
  std::vector<std::pair<int, Operand>> final_copies_;
  int num_rows_ = 0;
  bool twice_ = false;
};

bool buildPlan(const ir::Graph& g, const ir::Node& node, ReducePlan* plan) {
  const ir::Graph& body = node.subgraph ? *node.subgraph : g;
  std::vector<const ir::Node*> nodes;
  if (node.subgraph) for (const ir::Node& n : body.nodes) nodes.push_back(&n);
  else nodes.push_back(&node);
  const std::vector<int>& inputs = node.subgraph ? body.inputs : node.inputs;
  const std::vector<int>& outputs = node.subgraph ? body.outputs : node.outputs;
  PlanBuilder b(body.tensors, inputs, outputs);
  if (!b.build(nodes, plan)) return false;
  plan->row_phases.resize(plan->steps.size() + 1);
  return true;
}

// Rows of the last axis up to this many elements run the slab schedule.
constexpr int64_t kSlab = 8192;

class ReduceKernel final : public Kernel {
 public:
  ReduceKernel(ReducePlan plan, ThreadPool& pool) : plan_(std::move(plan)), pool_(pool) {
    const ReduceLayout& l = plan_.layout;
    block_ = std::min(l.inner(), kTile);
    blocks_ = (l.inner() + block_ - 1) / block_;
    tile_rows_ = l.inner() == 1 ? kTile : std::max<int64_t>(1, kTile / l.inner());
    slab_ = l.inner() == 1 && l.extent() <= kSlab;
    main_scratch_ = slab_ ? plan_.slab.scratchFloats(l.extent()) : plan_.scratch;
    main_results_ = slab_ ? plan_.slab.code.size() : plan_.results;
    per_thread_ = main_scratch_ + plan_.row_scratch + 2 * static_cast<size_t>(plan_.num_rows) * kTile;
    per_thread_ = threadStride(per_thread_, sizeof(float));
    results_stride_ = threadStride(main_results_ + plan_.row_results, sizeof(const float*));
    scratch_.resize(pool.size() * per_thread_);
    results_.resize(pool.size() * results_stride_);
    row_ptrs_.resize(pool.size() * 2 * static_cast<size_t>(plan_.num_rows));
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const ReduceLayout& l = plan_.layout;
    const int64_t per_group = std::max<int64_t>(1, l.extent() * block_);
    pool_.parallelFor(l.outer() * blocks_, 1, std::max<int64_t>(1, 32 * 1024 / per_group),
                      [&](int thread, int64_t begin, int64_t end) {
      const size_t nr = static_cast<size_t>(plan_.num_rows);
      Buffers b;
      b.scratch = scratch_.data() + thread * per_thread_;
      b.row_scratch = b.scratch + main_scratch_;
      b.results = results_.data() + thread * results_stride_;
      b.row_results = b.results + main_results_;
      b.rows = row_ptrs_.data() + thread * 2 * nr;
      b.patterns = b.rows + nr;
      float* row_data = b.row_scratch + plan_.row_scratch;
      for (size_t k = 0; k < nr; ++k) {
        b.rows[k] = row_data + k * kTile;
        b.patterns[k] = repeatsRows() ? row_data + (nr + k) * kTile : b.rows[k];
      }
      for (int64_t g = begin; g < end; ++g) slab_ ? runSlab(g, in, out, b) : runGroup(g, in, out, b);
    });
    return Status::Ok();
  }

 private:
  struct Buffers {
    float* scratch;      // the passes' (or the slab's) tile buffers
    float* row_scratch;  // the row phases'
    const float** results;
    const float** row_results;
    float** rows;      // each row value on the group's inner block
    float** patterns;  // that block repeated over a tile's rows
  };

  // Tiles of several rows read a row value repeated once per row.
  bool repeatsRows() const { return plan_.layout.inner() > 1 && tile_rows_ > 1; }

  void rowPhase(size_t k, int64_t first_row, int64_t w, const std::vector<TensorView>& in,
                const std::vector<MutableTensorView>& out, const Buffers& b) const {
    const Program& p = plan_.row_phases[k];
    if (p.code.empty() && p.copies.empty()) return;
    TileRunner(p, in, out, b.row_scratch, b.row_results, b.rows, false).run(first_row, w);
  }

  // Row o of a last-axis reduction: each instruction once over the whole row.
  void runSlab(int64_t o, const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out,
               const Buffers& b) const {
    const int64_t R = plan_.layout.extent();
    TileRunner runner(plan_.slab, in, out, b.scratch, b.results, b.rows, true, R);
    rowPhase(0, o, 1, in, out, b);
    size_t done = 0;
    for (size_t k = 0; k < plan_.steps.size(); ++k) {
      runner.runRange(o * R, R, done, plan_.slab_ends[k], false);
      done = plan_.slab_ends[k];
      const ReduceStep& step = plan_.steps[k];
      Accumulator acc{step.kind, {}};
      acc.start(b.rows[step.row], 1);
      acc.add(b.rows[step.row], runner.load(plan_.slab_inputs[k]), R, 1);
      acc.finish(b.rows[step.row], 1, R);
      rowPhase(k + 1, o, 1, in, out, b);
    }
    runner.runRange(o * R, R, done, plan_.slab.code.size(), true);
  }

  // Group g: row block (o, inner positions [i0, i0 + w)), each reduction a pass of tiles
  // that recomputes its prologue.
  void runGroup(int64_t g, const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out,
                const Buffers& b) const {
    const ReduceLayout& l = plan_.layout;
    const int64_t o = g / blocks_, i0 = (g % blocks_) * block_, w = std::min(block_, l.inner() - i0);
    const int64_t R = l.extent(), I = l.inner();
    const int64_t first_row = o * I + i0;
    auto pass = [&](const Program& p, const ReduceStep* step) {
      if (repeatsRows()) {
        for (int k = 0; k < plan_.num_rows; ++k)
          for (int64_t r = 0; r < tile_rows_; ++r) std::memcpy(b.patterns[k] + r * w, b.rows[k], w * sizeof(float));
      }
      TileRunner runner(p, in, out, b.scratch, b.results, I == 1 ? b.rows : b.patterns, I == 1);
      Accumulator acc{step ? step->kind : Reduction::kSum, {}};
      float* acc_row = step ? b.rows[step->row] : nullptr;
      if (step) acc.start(acc_row, w);
      for (int64_t r0 = 0; r0 < R; r0 += tile_rows_) {
        const int64_t kr = std::min(tile_rows_, R - r0);
        runner.run((o * R + r0) * I + i0, kr * w);
        if (step) acc.add(acc_row, runner.load(step->input), kr, w);
      }
      if (step) acc.finish(acc_row, w, R);
    };
    rowPhase(0, first_row, w, in, out, b);
    for (size_t k = 0; k < plan_.steps.size(); ++k) {
      pass(plan_.passes[k], &plan_.steps[k]);
      rowPhase(k + 1, first_row, w, in, out, b);
    }
    const Program& last = plan_.passes.back();
    if (!last.code.empty() || !last.copies.empty()) pass(last, nullptr);
  }

  ReducePlan plan_;
  ThreadPool& pool_;
  int64_t block_ = 1, blocks_ = 1, tile_rows_ = 1;
  bool slab_ = false;
  size_t main_scratch_ = 0, main_results_ = 0, per_thread_ = 0, results_stride_ = 0;
  std::vector<float> scratch_;
  std::vector<const float*> results_;
  std::vector<float*> row_ptrs_;
};

}  // namespace

bool canRunReduce(const ir::Graph& g, const ir::Node& node) {
  ReducePlan plan;
  return buildPlan(g, node, &plan);
}

StatusOr<std::unique_ptr<Kernel>> compileReduce(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  ReducePlan plan;
  if (!buildPlan(g, node, &plan)) {
    return makeError(StatusCode::kInternal, "cpu: ", node.op->name, " is not a reduce cluster");
  }
  return std::unique_ptr<Kernel>(new ReduceKernel(std::move(plan), pool));
}

}  // namespace gkrt::cpu
