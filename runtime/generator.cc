#include "runtime/generator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>

#include "fusion/tensor_parallel_shard.h"
#include "runtime/base/communicator.h"

namespace gkrt {
namespace {

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool isIndexType(DType t) { return t == DType::kInt64 || t == DType::kInt32; }

// Writes `n` int64 values as the input's integer type into `scratch` (reused).
const void* asIndexType(const int64_t* v, size_t n, DType t, std::vector<int32_t>& scratch) {
  if (t == DType::kInt64) return v;
  scratch.resize(std::max(scratch.size(), n));
  int32_t* out = scratch.data();
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(v[i]);
  return out;
}

}  // namespace

GeneratorOptions generatorOptionsFrom(const SessionOptions& so, int64_t max_context) {
  GeneratorOptions go;
  go.backend = so.backend;
  go.backend_options = so.backend_options;
  go.fusion = so.fusion;
  go.max_memory_bytes = so.max_memory_bytes;
  go.max_context = max_context;
  return go;
}

StatusOr<std::unique_ptr<Generator>> Generator::create(const ir::Graph& model, const GeneratorOptions& options) {
  std::unique_ptr<Generator> gen(new Generator());
  Generator& G = *gen;
  ir::Graph g = ir::cloneGraph(model);
  ASSIGN_OR_RETURN(G.binding_, bindKvCache(g, options.max_context));
  const int64_t C = options.max_context;
  for (int t : g.outputs) {
    if (g.tensors[size_t(t)].name == "logits" || g.outputs.size() == 1) keepLastPositionLogits(g, t);
  }
  const std::shared_ptr<Communicator>& comm = options.backend_options.communicator;
  if (comm && comm->size() > 1) {  // tensor parallel: this rank's heads, caches and feed-forward columns
    auto part = shardForRank(g, comm->rank(), comm->size(), &G.shard_report_);
    if (!part.ok()) return part.status().withContext("tensor-parallel decoder");
    g = std::move(*part);
    for (KvCacheLayer& l : G.binding_.layers) {
      const int t = g.findTensor(l.key);
      if (t >= 0) l.kv_heads = g.tensors[size_t(t)].shape[1];
    }
  }
  SessionOptions so;
  for (const KvCacheLayer& l : G.binding_.layers) so.shared_inputs.insert({l.key, l.value});  // one cache for every plan
  so.backend = options.backend;
  so.backend_options = options.backend_options;
  so.fusion = options.fusion;
  so.max_memory_bytes = options.max_memory_bytes;
  so.max_cached_plans = 3;  // decode, the last prompt length, one more
  std::map<std::string, std::string> cache_of;
  for (const KvCacheLayer& l : G.binding_.layers) cache_of[l.key] = l.value;
  for (int t : g.inputs) {
    const ir::Tensor& in = g.tensors[size_t(t)];
    const bool cache = std::any_of(G.binding_.layers.begin(), G.binding_.layers.end(),
                                   [&](const KvCacheLayer& l) { return l.key == in.name || l.value == in.name; });
    if (in.name == "input_ids" || in.name == "attention_mask" || in.name == "position_ids") {
      if (!isIndexType(in.dtype) || in.shape.size() != 2) {
        return makeError(StatusCode::kUnsupported, "decoder input '", in.name, "' is ", dtypeName(in.dtype), " ",
                         shapeToString(in.shape), "; the generator feeds int64 or int32 [batch, positions]");
      }
      const bool mask = in.name == "attention_mask";
      so.input_shapes[in.name] = {1, mask ? C : 1};
    } else if (in.name == kPastLengthInput) {
      so.input_shapes[in.name] = {1};
    } else if (cache) {
      Shape s = in.shape;
      s[0] = 1;
      so.input_shapes[in.name] = s;
    } else {
      return makeError(StatusCode::kUnsupported, "decoder input '", in.name, "' is not one the generator feeds "
                       "(input_ids, attention_mask, position_ids and the past keys/values)");
    }
  }
  if (!so.input_shapes.count("input_ids")) return makeError(StatusCode::kUnsupported, "the decoder has no input 'input_ids'");
  ASSIGN_OR_RETURN(G.session_, Session::create(g, so));
  Session& s = *G.session_;
  G.ids_ = s.inputIndex("input_ids");
  G.mask_ = s.inputIndex("attention_mask");
  G.positions_ = s.inputIndex("position_ids");
  G.past_ = s.inputIndex(kPastLengthInput);
  G.logits_out_ = s.outputIndex("logits") >= 0 ? s.outputIndex("logits") : 0;
  G.ids_dtype_ = s.inputs()[size_t(G.ids_)].dtype;
  if (G.mask_ >= 0) G.mask_dtype_ = s.inputs()[size_t(G.mask_)].dtype;
  if (G.positions_ >= 0) G.positions_dtype_ = s.inputs()[size_t(G.positions_)].dtype;
  const TensorInfo& out = s.outputs()[size_t(G.logits_out_)];
  if (out.dtype != DType::kFloat32 || out.shape.size() != 3 || out.shape[1] != 1) {
    return makeError(StatusCode::kUnsupported, "the decoder's output '", out.name, "' is ", dtypeName(out.dtype), " ",
                     shapeToString(out.shape), "; the generator reads float32 logits [batch, positions, vocabulary]");
  }
  G.vocab_ = out.shape[2];
  G.decode_kernels_ = s.kernelCount();
  G.shaped_for_ = 1;
  for (const KvCacheLayer& l : G.binding_.layers) {  // the caches start defined (never read before written)
    for (const std::string& name : {l.key, l.value}) {
      if (s.sharesInput(name)) continue;  // made as zeros
      const int k = s.inputIndex(name);
      HostTensor zeros(s.inputs()[size_t(k)].dtype, s.inputs()[size_t(k)].shape);
      std::memset(zeros.data(), 0, zeros.bytes());
      RETURN_IF_ERROR(s.setInput(name, zeros));
    }
  }
  G.logits_.assign(size_t(G.vocab_), 0.0f);
  G.probs_.assign(size_t(G.vocab_), 0.0f);
  G.order_.assign(size_t(G.vocab_), 0);
  G.mask_values_.assign(size_t(C), 0);
  G.history_.reserve(size_t(C));
  G.step_positions_.reserve(size_t(C));
  G.ids32_.reserve(size_t(C));
  G.positions32_.reserve(size_t(C));
  G.mask32_.reserve(size_t(C));
  return gen;
}

void Generator::reset() {
  position_ = 0;
  mask_filled_ = 0;
  std::fill(mask_values_.begin(), mask_values_.end(), 0);
  history_.clear();
}

Status Generator::runStep(const int64_t* ids, size_t n) {
  Session& s = *session_;
  const int64_t len = static_cast<int64_t>(n);
  if (shaped_for_ != len) {
    std::map<std::string, Shape> shapes{{"input_ids", {1, len}}};
    if (positions_ >= 0) shapes["position_ids"] = {1, len};
    RETURN_IF_ERROR(s.resizeInputs(shapes));
    shaped_for_ = len;
  }
  RETURN_IF_ERROR(s.setInputData(size_t(ids_), asIndexType(ids, n, ids_dtype_, ids32_), n * dtypeSize(ids_dtype_)));
  if (positions_ >= 0) {
    step_positions_.resize(n);
    std::iota(step_positions_.begin(), step_positions_.end(), position_);
    RETURN_IF_ERROR(s.setInputData(size_t(positions_), asIndexType(step_positions_.data(), n, positions_dtype_, positions32_),
                                   n * dtypeSize(positions_dtype_)));
  }
  if (mask_ >= 0) {  // ones over the positions in use, zeros after
    for (int64_t j = mask_filled_; j < position_ + len; ++j) mask_values_[size_t(j)] = 1;
    mask_filled_ = position_ + len;
    const void* data = asIndexType(mask_values_.data(), mask_values_.size(), mask_dtype_, mask32_);
    RETURN_IF_ERROR(s.setInputData(size_t(mask_), data, mask_values_.size() * dtypeSize(mask_dtype_)));
  }
  const int64_t past = position_;
  RETURN_IF_ERROR(s.setInputData(size_t(past_), &past, sizeof past));
  RETURN_IF_ERROR(s.run());
  if (n == 1 || s.outputs()[size_t(logits_out_)].shape[1] == 1) {  // the last position's only
    return s.copyOutputData(size_t(logits_out_), logits_.data(), logits_.size() * sizeof(float));
  }
  step_logits_.resize(n * size_t(vocab_));
  RETURN_IF_ERROR(s.copyOutputData(size_t(logits_out_), step_logits_.data(), step_logits_.size() * sizeof(float)));
  std::copy(step_logits_.end() - vocab_, step_logits_.end(), logits_.begin());
  return Status::Ok();
}

Status Generator::append(const int64_t* ids, size_t n) {
  if (n == 0) return makeError(StatusCode::kInvalidArgument, "no tokens to append");
  if (position_ + static_cast<int64_t>(n) > capacity()) {
    return makeError(StatusCode::kInvalidArgument, "the context is full: ", position_, " positions used + ", n, " new ones exceed ",
                     "max_context ", capacity(), " (start a new sequence, or create the generator with a larger max context)");
  }
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_) {
      return makeError(StatusCode::kInvalidArgument, "token id ", ids[i], " at ", i, " is outside the vocabulary [0, ", vocab_, ")");
    }
  }
  RETURN_IF_ERROR(runStep(ids, n));
  position_ += static_cast<int64_t>(n);
  history_.insert(history_.end(), ids, ids + n);
  return Status::Ok();
}

int64_t Generator::sample(const SamplingOptions& o) {
  std::copy(logits_.begin(), logits_.end(), probs_.begin());
  float* x = probs_.data();
  if (o.repetition_penalty > 0 && o.repetition_penalty != 1.0f) {
    // each token once: order_ marks the ones done (reset below)
    for (int64_t id : history_) {
      if (order_[size_t(id)] == -1) continue;
      order_[size_t(id)] = -1;
      x[id] = x[id] > 0 ? x[id] / o.repetition_penalty : x[id] * o.repetition_penalty;
    }
    for (int64_t id : history_) order_[size_t(id)] = 0;
  }
  if (o.temperature <= 0.0f) return std::max_element(x, x + vocab_) - x;
  std::iota(order_.begin(), order_.end(), 0);
  auto desc = [x](int32_t a, int32_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); };
  int64_t n = vocab_;
  if (o.top_k > 0 && o.top_k < vocab_) {
    n = o.top_k;
    std::partial_sort(order_.begin(), order_.begin() + n, order_.end(), desc);
  } else if (o.top_p < 1.0f) {
    std::sort(order_.begin(), order_.end(), desc);
  }
  const float top = *std::max_element(x, x + vocab_);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp((x[order_[size_t(i)]] - top) / o.temperature);
  double kept = 0;
  int64_t cut = n;
  if (o.top_p < 1.0f) {  // order_[0..n) is sorted
    for (int64_t i = 0; i < n; ++i) {
      kept += std::exp((x[order_[size_t(i)]] - top) / o.temperature) / sum;
      if (kept >= o.top_p) { cut = i + 1; break; }
    }
  }
  double total = 0;
  for (int64_t i = 0; i < cut; ++i) total += std::exp((x[order_[size_t(i)]] - top) / o.temperature);
  std::uniform_real_distribution<double> u(0.0, total);
  double r = u(rng_), acc = 0;
  for (int64_t i = 0; i < cut; ++i) {
    acc += std::exp((x[order_[size_t(i)]] - top) / o.temperature);
    if (r < acc) return order_[size_t(i)];
  }
  return order_[size_t(cut - 1)];
}

Status Generator::profileLastStep(std::vector<double>* kernel_seconds) {
  if (position_ == 0) return makeError(StatusCode::kInvalidArgument, "nothing ran yet: append tokens first");
  return session_->runProfiled(kernel_seconds);
}

Status checkSampling(const SamplingOptions& s) {
  if (s.temperature >= 0 && s.top_k >= 0 && s.top_p > 0 && s.top_p <= 1 && s.repetition_penalty > 0) return Status::Ok();
  return makeError(StatusCode::kInvalidArgument, "sampling options out of range: temperature ", s.temperature, ", top_k ", s.top_k,
                   ", top_p ", s.top_p, ", repetition_penalty ", s.repetition_penalty,
                   "; they take temperature >= 0, top_k >= 0, 0 < top_p <= 1, repetition_penalty > 0");
}

Status Generator::generate(const std::vector<int64_t>& prompt, const GenerateOptions& options,
                           const std::function<bool(int64_t)>& on_token, GenerateStats* stats) {
  if (prompt.empty()) return makeError(StatusCode::kInvalidArgument, "the prompt has no tokens");
  if (options.max_new_tokens < 0) return makeError(StatusCode::kInvalidArgument, "max_new_tokens must be 0 or more");
  RETURN_IF_ERROR(checkSampling(options.sampling));
  reset();
  reseed(options.sampling.seed);
  GenerateStats st;
  st.prompt_tokens = static_cast<int64_t>(prompt.size());
  const auto t0 = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(append(prompt.data(), prompt.size()));
  st.prefill_seconds = secondsSince(t0);
  if (options.max_new_tokens > 0) {
    int64_t id = sample(options.sampling);
    if (options.agree) id = options.agree(id);
    st.first_token_seconds = secondsSince(t0);
    const auto t1 = std::chrono::steady_clock::now();
    for (;;) {
      ++st.generated_tokens;
      const bool go_on = !on_token || on_token(id);
      const bool stop = std::find(options.stop_ids.begin(), options.stop_ids.end(), id) != options.stop_ids.end();
      if (!go_on || stop || st.generated_tokens == options.max_new_tokens) break;
      RETURN_IF_ERROR(append(&id, 1));
      id = sample(options.sampling);
      if (options.agree) id = options.agree(id);
    }
    st.decode_seconds = secondsSince(t1);
  }
  if (stats) *stats = st;
  return Status::Ok();
}

}  // namespace gkrt
