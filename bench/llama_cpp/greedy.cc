// llama-greedy: greedy decoding through llama.cpp's C API, the peer side of gkrt's
// checks and benchmarks on GGUF files (bench/llama_cpp/build.sh builds it).
//
//   llama-greedy MODEL.gguf (--prompt TEXT | --ids 1,2,3) [-n 32] [-t 2] [--logits FILE] [--kv f16|f32]
//                [--warmup N]
//
// Prints the prompt's ids, the generated ids (one line each), then the prefill and
// decode times (after N untimed warm-up rounds of the same generation, the cache cleared
// before each). --logits writes each picked-from logits row as raw float32.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "llama.h"

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char** argv) {
  std::string model_path, prompt, ids_arg, logits_path, kv = "f16";
  int n = 32, threads = 1, warmup = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", a.c_str()); std::exit(2); }
      return argv[++i];
    };
    if (a == "--prompt") prompt = next();
    else if (a == "--ids") ids_arg = next();
    else if (a == "-n") n = std::atoi(next().c_str());
    else if (a == "-t") threads = std::atoi(next().c_str());
    else if (a == "--logits") logits_path = next();
    else if (a == "--kv") kv = next();
    else if (a == "--warmup") warmup = std::atoi(next().c_str());
    else if (model_path.empty()) model_path = a;
    else { std::fprintf(stderr, "unknown argument %s\n", a.c_str()); return 2; }
  }
  if (model_path.empty() || (prompt.empty() && ids_arg.empty())) {
    std::fprintf(stderr, "usage: llama-greedy MODEL.gguf (--prompt TEXT | --ids 1,2,3) [-n 32] [-t 2] [--logits FILE] [--kv f16|f32] [--warmup N]\n");
    return 2;
  }
  llama_backend_init();
  const double t_load = now();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(model_path.c_str(), mp);
  if (!model) { std::fprintf(stderr, "cannot load %s\n", model_path.c_str()); return 1; }
  const llama_vocab* vocab = llama_model_get_vocab(model);
  std::vector<llama_token> tokens;
  if (!ids_arg.empty()) {
    for (const char* p = ids_arg.c_str(); *p;) {
      tokens.push_back(static_cast<llama_token>(std::strtol(p, const_cast<char**>(&p), 10)));
      if (*p == ',') ++p;
    }
  } else {
    const int k = -llama_tokenize(vocab, prompt.c_str(), int(prompt.size()), nullptr, 0, true, false);
    tokens.resize(size_t(k));
    llama_tokenize(vocab, prompt.c_str(), int(prompt.size()), tokens.data(), k, true, false);
  }
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = uint32_t(tokens.size() + n + 8);
  cp.n_batch = uint32_t(tokens.size());
  cp.n_threads = threads;
  cp.n_threads_batch = threads;
  if (kv == "f32") cp.type_k = cp.type_v = GGML_TYPE_F32;  // llama.cpp's default cache is f16
  else if (kv != "f16") { std::fprintf(stderr, "--kv f16 or f32\n"); return 2; }
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) { std::fprintf(stderr, "cannot make a context\n"); return 1; }
  const int n_vocab = llama_vocab_n_tokens(vocab);
  std::FILE* lf = logits_path.empty() ? nullptr : std::fopen(logits_path.c_str(), "wb");
  std::printf("prompt:");
  for (llama_token t : tokens) std::printf(" %d", t);
  std::printf("\n");
  std::vector<llama_token> out;
  double t0 = 0, t_first = 0, t_end = 0;
  for (int round = 0; round <= warmup; ++round) {  // warm-up rounds first, the same work untimed
    llama_memory_clear(llama_get_memory(ctx), true);
    out.clear();
    t0 = now();
    llama_batch batch = llama_batch_get_one(tokens.data(), int32_t(tokens.size()));
    llama_token tok = 0;
    for (int step = 0; step < n; ++step) {
      if (llama_decode(ctx, batch) != 0) { std::fprintf(stderr, "llama_decode failed at step %d\n", step); return 1; }
      const float* logits = llama_get_logits_ith(ctx, -1);
      if (lf && round == warmup) std::fwrite(logits, sizeof(float), size_t(n_vocab), lf);
      int best = 0;
      for (int v = 1; v < n_vocab; ++v) if (logits[v] > logits[best]) best = v;
      if (step == 0) t_first = now();
      tok = best;
      out.push_back(tok);
      batch = llama_batch_get_one(&tok, 1);
    }
    t_end = now();
  }
  if (lf) std::fclose(lf);
  std::printf("ids:");
  for (llama_token t : out) std::printf(" %d", t);
  std::printf("\n");
  std::printf("load %.1f ms; prefill %zu tokens %.1f ms (%.1f tokens/s); decode %d tokens %.1f ms (%.1f tokens/s)\n",
              (t0 - t_load) * 1e3, tokens.size(), (t_first - t0) * 1e3, double(tokens.size()) / (t_first - t0),
              n - 1, (t_end - t_first) * 1e3, double(n - 1) / (t_end - t_first));
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
