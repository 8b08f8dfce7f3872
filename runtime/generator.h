// Stateful text generation with a decoder LLM (a converted model with past key/value
// inputs and present outputs: optimum's export, onnxruntime-genai's builder, opset 23's
// Attention).
//
//   ASSIGN_OR_RETURN(ir::Graph model, loadModelFile("smollm2.gkm"));
//   GeneratorOptions opts;                 // backend, threads, max_context, fusion
//   ASSIGN_OR_RETURN(auto gen, Generator::create(model, opts));
//   GenerateOptions g;  g.max_new_tokens = 32;  g.sampling.temperature = 0;  // greedy
//   RETURN_IF_ERROR(gen->generate(prompt_ids, g, [](int64_t id) { print(id); return true; }));
//
// create() rewrites every layer's `present = Concat(past, new)` + attention into one
// CachedAttention over a cache of max_context positions (fusion/kv_cache.h), which the
// kernels update in place: no past is copied and nothing is allocated per token. The
// prompt runs as one prefill (a plan for its length), then each token as one run of
// the decode plan (one position; compiled once). A sequence that would pass
// max_context is an error naming both, never a write past the cache. With a communicator
// of N ranks in the backend options, each rank's generator holds its part of the heads,
// caches and feed-forward columns and sums over the ranks (tools/tensor_parallel_run.cc
// runs it under mpirun); every rank's logits are then the whole model's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "fusion/kv_cache.h"
#include "fusion/tensor_parallel_shard.h"
#include "runtime/session.h"

namespace gkrt {

struct SamplingOptions {
  float temperature = 0.0f;         // 0: greedy (the largest logit)
  int top_k = 0;                    // 0: every token
  float top_p = 1.0f;               // nucleus: the fewest tokens whose probabilities sum to top_p
  float repetition_penalty = 1.0f;  // >1: logits of tokens already in the sequence divided (positive) or multiplied (negative)
  uint64_t seed = 0;
};

// Sampling options in range (temperature >= 0, top_k >= 0, 0 < top_p <= 1,
// repetition_penalty > 0), or an error naming each; generate() checks them, and callers
// of sample() do (the CLI, C and Python front ends all go through one of the two).
Status checkSampling(const SamplingOptions& s);

struct GeneratorOptions {
  std::string backend = "cpu";
  BackendOptions backend_options;
  std::optional<FusionOptions> fusion;
  int64_t max_context = 2048;  // cache positions: prompt + generated tokens
  size_t max_memory_bytes = defaultMaxMemoryBytes();
};

// A generator on a session's backend, backend options, fusion and memory limit (what the
// tools' session flags give), with `max_context` cache positions.
GeneratorOptions generatorOptionsFrom(const SessionOptions& so, int64_t max_context);

struct GenerateOptions {
  int64_t max_new_tokens = 32;
  SamplingOptions sampling;
  std::vector<int64_t> stop_ids;  // generation ends after emitting one of these
  // Tensor-parallel ranks: takes this rank's pick and returns the one every rank goes on
  // with (rank 0's, broadcast), so that sampling never lets the ranks' sequences part.
  std::function<int64_t(int64_t)> agree;
};

struct GenerateStats {
  int64_t prompt_tokens = 0, generated_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;  // decode: every token after the first
  double first_token_seconds = 0;                  // prefill + sampling the first token
};

class Generator {
 public:
  static StatusOr<std::unique_ptr<Generator>> create(const ir::Graph& model, const GeneratorOptions& options);

  // Empties the cache: the next append() starts a new sequence.
  void reset();
  // Runs `n` tokens at the current position (a prompt's prefill, or one generated
  // token); the last one's logits are then in logits(). Errors when position() + n
  // would pass capacity().
  Status append(const int64_t* ids, size_t n);
  // The next token from logits() under `s`; sampling draws from the generator's own
  // random engine, seeded by reseed().
  int64_t sample(const SamplingOptions& s);
  void reseed(uint64_t seed) { rng_.seed(seed); }
  // Prefill of `prompt` (after reset()), then up to max_new_tokens tokens, each handed
  // to `on_token` as it comes (return false to stop).
  Status generate(const std::vector<int64_t>& prompt, const GenerateOptions& options,
                  const std::function<bool(int64_t)>& on_token, GenerateStats* stats = nullptr);

  const float* logits() const { return logits_.data(); }
  int64_t vocabSize() const { return vocab_; }
  int64_t position() const { return position_; }
  int64_t capacity() const { return binding_.capacity; }
  const KvCacheBinding& binding() const { return binding_; }
  // The decode plan's session (compiled graph, kernels, fusion report).
  const Session& session() const { return *session_; }
  size_t decodeKernelCount() const { return decode_kernels_; }
  // With a communicator of several ranks (GeneratorOptions::backend_options.communicator),
  // the decoder is split for this rank (fusion/tensor_parallel_shard.h): what went where.
  const ShardReport& shardReport() const { return shard_report_; }
  // Runs the last step again (same tokens, same position: the cache ends as it was),
  // timing every kernel (Session::runProfiled); kernel names from session().kernelInfos().
  Status profileLastStep(std::vector<double>* kernel_seconds);

 private:
  Generator() = default;
  Status runStep(const int64_t* ids, size_t n);

  std::unique_ptr<Session> session_;
  KvCacheBinding binding_;
  ShardReport shard_report_;
  int ids_ = -1, mask_ = -1, positions_ = -1, past_ = -1, logits_out_ = -1;
  DType ids_dtype_ = DType::kInt64, mask_dtype_ = DType::kInt64, positions_dtype_ = DType::kInt64;
  int64_t vocab_ = 0, position_ = 0, mask_filled_ = 0;
  int64_t shaped_for_ = -1;  // the sequence length the active plan was resized for
  size_t decode_kernels_ = 0;
  std::vector<float> logits_;             // the last position's
  std::vector<float> step_logits_;        // a run's, every position
  std::vector<int64_t> mask_values_, step_positions_;
  std::vector<int32_t> ids32_, positions32_, mask32_;  // int32 inputs' values
  std::vector<int64_t> history_;          // the sequence so far (repetition penalty)
  std::vector<int32_t> order_;            // sampling scratch, one per vocabulary entry
  std::vector<float> probs_;
  std::mt19937_64 rng_{0};
};

}  // namespace gkrt
