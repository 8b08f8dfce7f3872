#include "backends/cpu/tensor/split_kernel.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/ir/op_def.h"

namespace gkrt::cpu {
namespace {

int64_t splitAxis(const ir::Graph& g, const ir::Node& node) {
  int64_t axis = node.attrs.get<SplitAttrs>().axis;
  const int64_t rank = static_cast<int64_t>(g.tensors[node.inputs[0]].shape.size());
  return axis < 0 ? axis + rank : axis;
}

int64_t concatAxis(const ir::Graph& g, const ir::Node& node) {
  int64_t axis = node.attrs.get<AxisAttrs>().axis;
  const int64_t rank = static_cast<int64_t>(g.tensors[node.outputs[0]].shape.size());
  return axis < 0 ? axis + rank : axis;
}

// Output k is rows [start_k, start_k + len_k) of every outer slice; a row is `inner` bytes.
class SplitKernel final : public Kernel {
 public:
  SplitKernel(const ir::Graph& g, const ir::Node& node, ThreadPool& pool, int block) : pool_(pool) {
    const Shape& x = g.tensors[node.inputs[0]].shape;
    const int64_t axis = splitAxis(g, node);
    const size_t es = dtypeSize(g.tensors[node.inputs[0]].dtype);
    outer_ = 1;
    for (int64_t d = 0; d < axis; ++d) outer_ *= x[d];
    int64_t inner = 1;
    for (size_t d = static_cast<size_t>(axis) + 1; d < x.size(); ++d) inner *= x[d];
    const int64_t div = block > 0 ? block : 1;  // blocked: rows are channel blocks
    rows_ = x[axis] / div;
    row_bytes_ = static_cast<size_t>(inner * div) * es;
    int64_t start = 0;
    for (int t : node.outputs) {
      const int64_t len = g.tensors[t].shape[axis] / div;
      starts_.push_back(start);
      lens_.push_back(len);
      start += len;
    }
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const auto* x = static_cast<const char*>(in[0].data);
    const int64_t n_out = static_cast<int64_t>(out.size());
    pool_.parallelFor(outer_ * n_out, 1, 1, [&](int, int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t o = i / n_out, k = i % n_out;
        const size_t bytes = static_cast<size_t>(lens_[k]) * row_bytes_;
        std::memcpy(static_cast<char*>(out[k].data) + o * bytes, x + (o * rows_ + starts_[k]) * row_bytes_, bytes);
      }
    });
    return Status::Ok();
  }

 private:
  ThreadPool& pool_;
  int64_t outer_ = 1, rows_ = 0;
  size_t row_bytes_ = 0;
  std::vector<int64_t> starts_, lens_;
};

// Concat as block copies: output row block k of every outer slice is input k. The
// copies are cut into pieces of at most kPieceBytes at compile, so a concat of one
// outer slice (batch 1) still spreads over the threads.
class ConcatKernel final : public Kernel {
 public:
  ConcatKernel(const ir::Graph& g, const ir::Node& node, ThreadPool& pool, int block) : pool_(pool) {
    const Shape& y = g.tensors[node.outputs[0]].shape;
    const int64_t axis = concatAxis(g, node);
    const size_t es = dtypeSize(g.tensors[node.outputs[0]].dtype);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= y[d];
    for (size_t d = static_cast<size_t>(axis) + 1; d < y.size(); ++d) inner *= y[d];
    const size_t out_row = static_cast<size_t>(y[axis] * inner) * es;
    for (int64_t o = 0; o < outer; ++o) {
      size_t at = o * out_row;
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        const size_t bytes = static_cast<size_t>(g.tensors[node.inputs[k]].shape[axis] * inner) * es;
        for (size_t done = 0; done < bytes; done += kPieceBytes) {
          pieces_.push_back({static_cast<int>(k), o * bytes + done, at + done, std::min(kPieceBytes, bytes - done)});
        }
        if (outer == 1) starts_.push_back(at);
        at += bytes;
      }
    }
    (void)block;  // blocked: channel blocks are whole, so the copies are the plain ones
    placed_.assign(node.inputs.size(), 0);
    active_.reserve(pieces_.size());
    for (size_t k = 0; k < pieces_.size(); ++k) active_.push_back(static_cast<int>(k));
  }

  // Batch 1 (one outer slice): input k is bytes [start_k, ...) of the output, so it
  // can be written there by its producer.
  std::vector<HostedInput> hostedInputs() const override {
    std::vector<HostedInput> h;
    for (size_t k = 0; k < starts_.size(); ++k) if (starts_[k] % 64 == 0) h.push_back({static_cast<int>(k), starts_[k]});
    return h;
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    auto* y = static_cast<char*>(out[0].data);
    if (!starts_.empty()) {  // the inputs already in place: their pieces are left out
      bool changed = false;
      for (size_t k = 0; k < placed_.size(); ++k) {
        const char placed = in[k].data == y + starts_[k];
        changed = changed || placed != placed_[k];
        placed_[k] = placed;
      }
      if (changed) {
        active_.clear();
        for (size_t i = 0; i < pieces_.size(); ++i) if (!placed_[size_t(pieces_[i].input)]) active_.push_back(static_cast<int>(i));
      }
    }
    pool_.parallelFor(static_cast<int64_t>(active_.size()), 1, 1, [&](int, int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const Piece& p = pieces_[size_t(active_[size_t(i)])];
        std::memcpy(y + p.dst, static_cast<const char*>(in[p.input].data) + p.src, p.bytes);
      }
    });
    return Status::Ok();
  }
  std::string detail() const override {
    const auto placed = std::count(placed_.begin(), placed_.end(), 1);
    if (placed == 0) return "block copies";
    if (placed == static_cast<long>(placed_.size())) return "every input in place, no copy";
    return "block copies, " + std::to_string(placed) + " of " + std::to_string(placed_.size()) + " inputs in place";
  }

 private:
  static constexpr size_t kPieceBytes = 64 << 10;
  struct Piece {
    int input;
    size_t src, dst, bytes;
  };
  ThreadPool& pool_;
  std::vector<Piece> pieces_;
  std::vector<size_t> starts_;  // batch 1: each input's byte offset in the output
  std::vector<char> placed_;    // per input: found in place at the last launch
  std::vector<int> active_;     // the pieces still copied
};

// Concat along the channels of NHWC tensors (int8 between convolutions, the layout plan's
// int8 NHWC): per pixel, each input's channels one after another.
class NhwcConcatKernel final : public Kernel {
 public:
  NhwcConcatKernel(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) : pool_(pool) {
    const Shape& y = g.tensors[node.outputs[0]].shape;
    const size_t es = dtypeSize(g.tensors[node.outputs[0]].dtype);
    pixels_ = y[0] * y[2] * y[3];
    for (int t : node.inputs) bytes_.push_back(size_t(g.tensors[t].shape[1]) * es);
    row_ = size_t(y[1]) * es;
  }
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    auto* y = static_cast<char*>(out[0].data);
    pool_.parallelFor(pixels_, 64, 256, [&](int, int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        char* dst = y + size_t(p) * row_;
        for (size_t k = 0; k < bytes_.size(); ++k) {
          std::memcpy(dst, static_cast<const char*>(in[k].data) + size_t(p) * bytes_[k], bytes_[k]);
          dst += bytes_[k];
        }
      }
    });
    return Status::Ok();
  }
  std::string detail() const override { return "channel copies, nhwc"; }

 private:
  ThreadPool& pool_;
  int64_t pixels_ = 0;
  size_t row_ = 0;
  std::vector<size_t> bytes_;
};

}  // namespace

bool canRunNhwcConcat(const ir::Graph& g, const ir::Node& node) {
  return canRunConcat(g, node) && g.tensors[node.outputs[0]].shape.size() == 4 && concatAxis(g, node) == 1;
}

StatusOr<std::unique_ptr<Kernel>> compileNhwcConcat(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  if (!canRunNhwcConcat(g, node)) return makeError(StatusCode::kInternal, "cpu: '", node.name, "' is not a channel concat");
  return std::unique_ptr<Kernel>(new NhwcConcatKernel(g, node, pool));
}

bool canRunConcat(const ir::Graph& g, const ir::Node& node) {
  if (std::string(node.op->name) != "Concat" || node.inputs.empty() || node.outputs.size() != 1) return false;
  const ir::Tensor& y = g.tensors[node.outputs[0]];
  if (!isStatic(y.shape) || y.shape.empty()) return false;
  const int64_t axis = concatAxis(g, node);
  if (axis < 0 || axis >= static_cast<int64_t>(y.shape.size())) return false;
  int64_t total = 0;
  for (int t : node.inputs) {
    if (t < 0 || g.tensors[t].dtype != y.dtype || g.tensors[t].shape.size() != y.shape.size()) return false;
    for (size_t d = 0; d < y.shape.size(); ++d) {
      if (static_cast<int64_t>(d) != axis && g.tensors[t].shape[d] != y.shape[d]) return false;
    }
    total += g.tensors[t].shape[axis];
  }
  return total == y.shape[axis];
}

bool concatCopiesIn(const ir::Graph& g, const ir::Node& node, const std::vector<char>& blocked, int block) {
  if (!canRunConcat(g, node)) return false;
  const auto is_blocked = [&](int t) { return static_cast<size_t>(t) < blocked.size() && blocked[t]; };
  const bool out_blocked = is_blocked(node.outputs[0]);
  for (int t : node.inputs) if (is_blocked(t) != out_blocked) return false;
  if (!out_blocked) return true;
  if (block <= 0 || g.tensors[node.outputs[0]].shape.size() != 4 || concatAxis(g, node) != 1) return false;
  for (int t : node.inputs) if (g.tensors[t].shape[1] % block != 0) return false;
  return true;
}

StatusOr<std::unique_ptr<Kernel>> compileConcat(const ir::Graph& g, const ir::Node& node, ThreadPool& pool, int block) {
  return std::unique_ptr<Kernel>(new ConcatKernel(g, node, pool, block));
}

bool canRunSplit(const ir::Graph& g, const ir::Node& node) {
  if (std::string(node.op->name) != "Split" || node.inputs.size() != 1 || node.inputs[0] < 0) return false;
  const ir::Tensor& x = g.tensors[node.inputs[0]];
  if (!isStatic(x.shape) || x.shape.empty()) return false;
  const int64_t axis = splitAxis(g, node);
  if (axis < 0 || axis >= static_cast<int64_t>(x.shape.size())) return false;
  int64_t total = 0;
  for (int t : node.outputs) {
    if (g.tensors[t].dtype != x.dtype || g.tensors[t].shape.size() != x.shape.size()) return false;
    total += g.tensors[t].shape[axis];
  }
  return total == x.shape[axis];
}

bool splitTakesBlocked(const ir::Graph& g, const ir::Node& node, int block) {
  if (block <= 0 || !canRunSplit(g, node) || g.tensors[node.inputs[0]].shape.size() != 4 || splitAxis(g, node) != 1) {
    return false;
  }
  for (int t : node.outputs) if (g.tensors[t].shape[1] % block != 0) return false;
  return true;
}

StatusOr<std::unique_ptr<Kernel>> compileSplit(const ir::Graph& g, const ir::Node& node, ThreadPool& pool, int block) {
  return std::unique_ptr<Kernel>(new SplitKernel(g, node, pool, block));
}

}  // namespace gkrt::cpu
