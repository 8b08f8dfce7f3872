#include "fusion/passes/pattern_match.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <string_view>
#include <tuple>

#include "fusion/passes/passes.h"
#include "runtime/ir/op_def.h"

namespace gkrt::passes {

PatternGraph::PatternGraph(const ir::Graph& g) : g_(g), producers_(g.producers()), uses_(g.tensors.size(), 0) {
  for (const ir::Node& n : g.nodes) for (int t : n.inputs) if (t >= 0) ++uses_[t];
  for (int t : g.outputs) ++uses_[t];
}

const ir::Node* PatternGraph::producer(int t, std::initializer_list<const char*> ops) const {
  if (t < 0 || producers_[t] < 0) return nullptr;
  const ir::Node& n = g_.nodes[producers_[t]];
  if (ops.size() == 0) return &n;
  for (const char* op : ops) if (isOp(n, op)) return &n;
  return nullptr;
}

std::vector<int> PatternGraph::users(int t) const {
  if (user_start_.empty()) {  // every tensor's readers at once, on the first call (a scan a call was quadratic)
    const size_t nt = g_.tensors.size();
    user_start_.assign(nt + 1, 0);
    auto each_reader = [&](auto&& f) {
      for (size_t i = 0; i < g_.nodes.size(); ++i) {
        const auto& in = g_.nodes[i].inputs;
        for (size_t k = 0; k < in.size(); ++k) {
          if (in[k] >= 0 && std::find(in.begin(), in.begin() + k, in[k]) == in.begin() + k) f(in[k], int(i));
        }
      }
    };
    each_reader([&](int x, int) { ++user_start_[size_t(x) + 1]; });
    for (size_t x = 0; x < nt; ++x) user_start_[x + 1] += user_start_[x];
    user_list_.resize(size_t(user_start_[nt]));
    std::vector<int> fill(user_start_.begin(), user_start_.end() - 1);
    each_reader([&](int x, int i) { user_list_[size_t(fill[size_t(x)]++)] = i; });
  }
  if (t < 0 || size_t(t) + 1 >= user_start_.size()) return {};
  return std::vector<int>(user_list_.begin() + user_start_[size_t(t)], user_list_.begin() + user_start_[size_t(t) + 1]);
}

bool isOp(const ir::Node& n, const char* op) { return n.op && std::strcmp(n.op->name, op) == 0; }

bool isPatternDType(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

std::optional<float> scalarConstant(const ir::Graph& g, int t) {
  if (t < 0) return std::nullopt;
  const ir::Tensor& x = g.tensors[t];
  if (!x.isConstant() || x.dtype != DType::kFloat32 || numElements(x.shape) != 1) return std::nullopt;
  float v;
  std::memcpy(&v, x.constant->data, sizeof v);
  return v;
}

bool isPlainMatMul(const ir::Node& n) {
  if (!(isOp(n, "MatMul") || isOp(n, "BatchMatMul")) || n.inputs.size() != 2) return false;
  const auto& a = n.attrs.get<MatMulAttrs>();
  return !a.transpose_a && !a.transpose_b;
}

int addPatternTensor(ir::Graph& g, const std::string& base, DType dtype, const Shape& shape) {
  ir::Tensor t;
  t.name = base;
  for (int k = 2; g.findTensor(t.name) >= 0; ++k) t.name = base + "_" + std::to_string(k);
  t.dtype = dtype;
  t.shape = shape;
  return g.addTensor(std::move(t));
}

namespace {

// Pattern constants of at least kSharedConstantBytes that a live plan already made with
// the same bytes: a generator's prefill and decode plans each merge a decoder's Q/K/V and
// gate/up weights, the same bytes twice (SmolLM2's fp32 file: 278 MB a plan).
constexpr size_t kSharedConstantBytes = size_t(64) << 10;

std::shared_ptr<const ir::ConstData> sharedConstant(const void* bytes, size_t size) {
  static std::mutex mutex;
  static std::multimap<std::pair<size_t, size_t>, std::weak_ptr<const ir::ConstData>> made;  // (size, hash) -> bytes
  // A sample of the bytes (64 of every 4096, and the last 64) as the key: equal bytes are
  // confirmed by memcmp, which a different constant fails at its first difference.
  const char* c = static_cast<const char*>(bytes);
  size_t hash = 0;
  for (size_t at = 0; at < size; at += 4096) {
    hash = hash * 31 + std::hash<std::string_view>{}(std::string_view(c + at, std::min<size_t>(64, size - at)));
  }
  hash = hash * 31 + std::hash<std::string_view>{}(std::string_view(c + size - std::min<size_t>(64, size), std::min<size_t>(64, size)));
  std::lock_guard<std::mutex> lock(mutex);
  for (auto it = made.begin(); it != made.end();) it = it->second.expired() ? made.erase(it) : std::next(it);  // plans gone
  for (auto [it, end] = made.equal_range(std::make_pair(size, hash)); it != end; ++it) {
    auto live = it->second.lock();
    if (live && std::memcmp(live->data, bytes, size) == 0) return live;
  }
  const auto key = std::make_pair(size, hash);
  auto fresh = ir::ConstData::copyOf(bytes, size);
  made.emplace(key, fresh);
  return fresh;
}

}  // namespace

int addPatternConstant(ir::Graph& g, const std::string& base, DType dtype, const Shape& shape, const void* bytes) {
  const int t = addPatternTensor(g, base, dtype, shape);
  const size_t size = static_cast<size_t>(numElements(shape)) * dtypeSize(dtype);
  g.tensors[t].constant = size >= kSharedConstantBytes ? sharedConstant(bytes, size) : ir::ConstData::copyOf(bytes, size);
  return t;
}

ir::Node patternNode(const char* op, const std::string& name, Attrs attrs, std::vector<int> inputs,
                     std::vector<int> outputs) {
  return ir::Node{name, findOp(op), std::move(attrs), std::move(inputs), std::move(outputs)};
}

Status replaceWithPatternNode(ir::Graph& g, int root, ir::Node node, std::vector<int> erase) {
  g.nodes[root] = std::move(node);
  std::sort(erase.begin(), erase.end());
  erase.erase(std::unique(erase.begin(), erase.end()), erase.end());
  for (size_t k = erase.size(); k-- > 0;) {
    if (erase[k] != root) g.nodes.erase(g.nodes.begin() + erase[k]);
  }
  FusionOptions none;
  FusionContext dce{g, none, FusionColumn::kCpu, {}, {}, nullptr};
  RETURN_IF_ERROR(eliminateDeadNodes(dce).status());
  // A reused output may now be made later than a reader. Only the order: validating the
  // whole graph after each of a decoder's 180 rewrites took 47 ms of its plan's compile
  // (the pipeline validates once at its end).
  return ir::restoreTopologicalOrder(g);
}

StatusOr<bool> rewriteAll(FusionContext& ctx, StatusOr<bool> (*match_one)(FusionContext&)) {
  bool changed = false;
  for (;;) {
    ASSIGN_OR_RETURN(bool hit, match_one(ctx));
    if (!hit) return changed;
    changed = true;
  }
}

}  // namespace gkrt::passes
