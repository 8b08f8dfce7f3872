// gkrt generate MODEL (--input-ids 1,2,3 | --prompt TEXT [--chat] [--system S] [--tokenizer T] [--stop S])
//   [--max-tokens N] [--temperature T --top-k K
//   --top-p P --repetition-penalty R --seed S] [--stop-ids a,b] [--max-context C]
//   [--threads N] [--backend ...]: a decoder LLM with its KV cache (runtime/generator.h);
//   the prompt's text (tools/text/) or ids in, the generated text or ids out as they come,
//   then the prefill and decode speeds and the time to the first token.
#include <chrono>
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>

#include <fstream>

#include "fusion/graph_text.h"
#include "runtime/generator.h"
#include "runtime/ir/op_def.h"
#include "tools/commands.h"
#include "tools/model_source.h"
#include "tools/npy.h"
#include "tools/parse_args.h"
#include "tools/text/tokenizer_load.h"

namespace gkrt::tools {
namespace {

struct GenerateArgs {
  std::string model;
  std::string input_ids, stop_ids, logits_out;
  std::string prompt, system, tokenizer;
  std::vector<std::string> stop_texts;
  bool chat = false;
  int64_t max_tokens = 32, max_context = 2048;
  int threads = 0, warmup = 0;
  float temperature = 0, top_p = 1, repetition_penalty = 1;
  int top_k = 0;
  uint64_t seed = 0;
  bool profile = false;
  std::string dump_graph;
  SessionArgs session;
  ImportArgs import;
};

Status generate(const GenerateArgs& a) {
  if (a.input_ids.empty() == a.prompt.empty()) {
    return makeError(StatusCode::kInvalidArgument, "give the prompt as text (--prompt) or as token ids (--input-ids), one of them");
  }
  if ((a.chat || !a.system.empty()) && a.prompt.empty()) return makeError(StatusCode::kInvalidArgument, "--chat and --system need --prompt");
  std::vector<int64_t> prompt;
  if (a.prompt.empty()) {
    ASSIGN_OR_RETURN(prompt, parseIdList(a.input_ids, "--input-ids"));
    if (prompt.empty()) return makeError(StatusCode::kInvalidArgument, "the prompt is empty: give its text or its token ids");
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> stops, parseIdList(a.stop_ids, "--stop-ids"));
  if (a.max_tokens < 0) return makeError(StatusCode::kInvalidArgument, "--max-tokens must be 0 or more");
  RETURN_IF_ERROR(checkSampling({a.temperature, a.top_k, a.top_p, a.repetition_penalty, a.seed}));  // before loading the model
  const auto t_load = std::chrono::steady_clock::now();
  ImportArgs import = a.import;
  import.input_shapes = a.session.input_shapes;
  ASSIGN_OR_RETURN(ir::Graph model, loadAnyModel(a.model, import));
  std::optional<text::TextPrompt> tp;  // --prompt: its tokenizer, ids and stops
  if (!a.prompt.empty()) {
    ASSIGN_OR_RETURN(tp, text::textPrompt(a.model, model, a.tokenizer, a.prompt, a.chat, a.system));
    prompt = tp->ids;
    if (prompt.empty()) return makeError(StatusCode::kInvalidArgument, "the prompt is empty: give its text or its token ids");
  }
  if (tp) stops.insert(stops.end(), tp->stops.begin(), tp->stops.end());
  ASSIGN_OR_RETURN(SessionOptions so, a.session.toOptions());
  GeneratorOptions go = generatorOptionsFrom(so, a.max_context);
  go.backend_options.num_threads = a.threads;
  ASSIGN_OR_RETURN(auto gen, Generator::create(model, go));
  const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count();
  GenerateOptions opts;
  opts.max_new_tokens = a.max_tokens;
  opts.stop_ids = stops;
  opts.sampling = {a.temperature, a.top_k, a.top_p, a.repetition_penalty, a.seed};
  GenerateStats st;
  for (int w = 0; w < a.warmup; ++w) RETURN_IF_ERROR(gen->generate(prompt, opts, nullptr));  // plans compiled, caches warm
  bool first = true;
  std::vector<float> all_logits;  // --logits-out: each generated token's distribution
  text::TextStream stream;        // --prompt: text out as whole UTF-8 characters
  std::string said;               // the text so far, for --stop
  Status text_error = Status::Ok();
  RETURN_IF_ERROR(gen->generate(prompt, opts, [&](int64_t id) {
    if (!a.logits_out.empty()) all_logits.insert(all_logits.end(), gen->logits(), gen->logits() + gen->vocabSize());
    if (!tp) {
      std::printf(first ? "%lld" : " %lld", static_cast<long long>(id));
      std::fflush(stdout);
      first = false;
      return true;
    }
    if (std::find(tp->stops.begin(), tp->stops.end(), id) != tp->stops.end()) return true;  // the end of the text: not shown
    auto piece = tp->tokenizer.decodePiece(id);
    if (!piece.ok()) {
      text_error = piece.status();
      return false;
    }
    const std::string out = stream.push(*piece);
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    said += *piece;
    for (const std::string& stop : a.stop_texts) {
      if (!stop.empty() && said.find(stop) != std::string::npos) return false;
    }
    return true;
  }, &st));
  RETURN_IF_ERROR(text_error);
  const std::string rest = stream.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::printf("\n");
  std::fflush(stdout);  // the ids before the statistics on stderr, even into one file
  if (!a.dump_graph.empty()) {  // the decode plan's fused graph, as text
    std::ofstream f(a.dump_graph);
    f << graphToText(gen->session().compiledGraph());
    if (!f) return makeError(StatusCode::kIoError, "cannot write --dump-graph '", a.dump_graph, "'");
  }
  if (a.profile) {  // the last decode step's kernels, by op, slowest first
    std::vector<double> secs;
    RETURN_IF_ERROR(gen->profileLastStep(&secs));
    const auto infos = gen->session().kernelInfos();
    const ir::Graph& g = gen->session().compiledGraph();
    std::map<std::string, std::pair<double, int>> by_op;
    for (size_t i = 0; i < secs.size() && i < g.nodes.size(); ++i) {
      const ir::Node& n = g.nodes[i];
      std::string key = n.op->name;
      if (n.subgraph) {
        key += " [";
        for (size_t k = 0; k < n.subgraph->nodes.size(); ++k) key += (k ? " " : "") + std::string(n.subgraph->nodes[k].op->name);
        key += "]";
      }
      if (i < infos.size() && !infos[i].detail.empty()) {
        std::string detail = infos[i].detail;  // generated kernels by kind, not by their entry names ("NVRTC gk12")
        const size_t gk = detail.rfind(" gk");
        if (gk != std::string::npos && detail.find_first_not_of("0123456789", gk + 3) == std::string::npos) detail.resize(gk);
        key += " {" + detail + "}";
      }
      by_op[key].first += secs[i];
      by_op[key].second += 1;
    }
    std::vector<std::pair<double, std::string>> rows;
    double total = 0;
    for (const auto& [k, v] : by_op) { rows.push_back({v.first, k + " x" + std::to_string(v.second)}); total += v.first; }
    std::sort(rows.rbegin(), rows.rend());
    std::fprintf(stderr, "decode step: %zu kernels, %.2f ms\n", secs.size(), total * 1e3);
    for (const auto& [t, k] : rows) std::fprintf(stderr, "  %8.3f ms %5.1f%%  %s\n", t * 1e3, 100 * t / total, k.c_str());
    std::vector<size_t> order(secs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return secs[x] > secs[y]; });
    std::fprintf(stderr, "slowest kernels:\n");
    for (size_t i = 0; i < std::min<size_t>(6, order.size()); ++i) {
      std::fprintf(stderr, "  %8.3f ms  %s\n", secs[order[i]] * 1e3, infos[order[i]].name.c_str());
    }
  }
  if (!a.logits_out.empty()) {
    HostTensor t(DType::kFloat32, {st.generated_tokens, gen->vocabSize()});
    std::copy(all_logits.begin(), all_logits.end(), static_cast<float*>(t.data()));
    RETURN_IF_ERROR(writeNpy(a.logits_out, t));
  }
  auto rate = [](int64_t n, double s) { return s > 0 ? n / s : 0.0; };
  std::fprintf(stderr,
               "prefill: %lld tokens in %.1f ms (%.1f tokens/s); first token after %.1f ms; decode: %lld tokens in %.1f ms "
               "(%.1f tokens/s); %zu kernels a decode step, %zu layers, cache of %lld positions on %s; model loaded and "
               "compiled in %.1f ms\n",
               static_cast<long long>(st.prompt_tokens), st.prefill_seconds * 1e3, rate(st.prompt_tokens, st.prefill_seconds),
               st.first_token_seconds * 1e3, static_cast<long long>(st.generated_tokens - 1), st.decode_seconds * 1e3,
               rate(st.generated_tokens - 1, st.decode_seconds), gen->decodeKernelCount(), gen->binding().layers.size(),
               static_cast<long long>(gen->capacity()), go.backend.c_str(), load_seconds * 1e3);
  return Status::Ok();
}

}  // namespace

Command addGenerateCommand(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* cmd = app.add_subcommand("generate", "generate text or token ids with a decoder LLM and its KV cache");
  cmd->add_option("model", a->model, "the decoder: .gkm, .gguf or .onnx (converted in memory)")->required();
  cmd->add_option("--input-ids", a->input_ids, "the prompt's token ids, comma-separated (the generated ids are printed)");
  cmd->add_option("--prompt", a->prompt, "the prompt as text (the generated text is printed as it comes)");
  cmd->add_flag("--chat", a->chat, "put --prompt in the model's chat template as a user turn (ChatML) and stop at its end");
  cmd->add_option("--system", a->system, "with --chat: the system turn (default: the template's own, if any)");
  cmd->add_option("--tokenizer", a->tokenizer, "for --prompt: a tokenizer.json or .gguf file (default: the model's own, else tokenizer.json beside it)");
  cmd->add_option("--stop", a->stop_texts, "with --prompt: stop once the generated text contains this (repeatable)");
  cmd->add_option("--max-tokens", a->max_tokens, "tokens to generate (default 32)");
  cmd->add_option("--temperature", a->temperature, "sampling temperature; 0 (default) = greedy");
  cmd->add_option("--top-k", a->top_k, "sample from the k most likely tokens (0 = all)");
  cmd->add_option("--top-p", a->top_p, "sample from the fewest tokens whose probabilities reach p (1 = all)");
  cmd->add_option("--repetition-penalty", a->repetition_penalty, "divide logits of tokens already in the sequence (1 = off)");
  cmd->add_option("--seed", a->seed, "random seed for sampling (default 0)");
  cmd->add_option("--stop-ids", a->stop_ids, "stop after emitting one of these ids, comma-separated");
  cmd->add_option("--max-context", a->max_context, "KV cache positions: prompt + generated tokens (default 2048)");
  cmd->add_option("--threads", a->threads, "cpu threads (default: all cores)");
  cmd->add_option("--warmup", a->warmup, "generate this many times first, unreported (the prompt's plan compiled, caches warm)");
  cmd->add_flag("--profile", a->profile, "time each kernel of the last decode step, by op");
  cmd->add_option("--dump-graph", a->dump_graph, "write the decode step's fused graph as text to this file");
  cmd->add_option("--logits-out", a->logits_out, "write the logits each token was picked from to this .npy [tokens, vocabulary]");
  a->session.addTo(cmd);
  a->import.addTo(cmd);
  return reportingCommand("generate", [a] { return generate(*a); });
}

}  // namespace gkrt::tools
