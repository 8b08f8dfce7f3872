// gkrt_tp_run: runs the rank files `gkrt shard` writes, one rank per MPI process; or,
// with --generate, a decoder LLM generating under tensor parallelism.
//
//   gkrt shard model.onnx --ranks 2 -o /tmp/m
//   mpirun -np 2 gkrt_tp_run /tmp/m --input x=x.npy [--output-dir DIR] [--backend cpu] [--threads 1] [--runs N] [--flags F]
//   mpirun -np 2 gkrt_tp_run --generate MODEL (--input-ids 1,2,3 | --prompt TEXT [--chat]) [--max-tokens 32]
//       [--max-context 2048] [--temperature T --top-k K --top-p P --seed S] [--ids-out F.npy] [--logits-out F.npy]
//
// Each process loads PREFIX.rank<its MPI rank>.gkm and runs it with an MPI communicator
// (runtime/base/mpi_communicator.h), so its AllReduce nodes sum over the ranks; every rank
// ends with the whole model's outputs. Rank 0 prints them (shape and first values) and
// writes NAME.npy into --output-dir. With --generate every process loads the whole
// decoder (.gguf, .gkm or .onnx) and its generator keeps its rank's part of the heads,
// caches and feed-forward columns (runtime/generator.h); rank 0 samples each token and
// broadcasts it, prints the text or ids, and writes the ids and logits when asked.
// Built where CMake finds MPI.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <type_traits>
#include <cstdio>
#include <optional>
#include <filesystem>
#include <set>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "fusion/fusion_options.h"
#include "runtime/base/mpi_communicator.h"
#include "runtime/generator.h"
#include "runtime/model_io.h"
#include "runtime/session.h"
#include "tools/model_source.h"
#include "tools/npy.h"
#include "tools/output_names.h"
#include "tools/parse_args.h"
#include "tools/text/tokenizer_load.h"

namespace {

struct Args {
  std::string prefix, output_dir, backend = "cpu";
  gkrt::FusionOptions fusion;  // MS_DEV_GRAPH_KERNEL_FLAGS, then --flags
  std::vector<std::pair<std::string, std::string>> inputs;  // name, .npy
  int threads = 1, runs = 1;
  bool generate = false, chat = false;  // --generate: PREFIX is the decoder
  std::string input_ids, prompt, ids_out, logits_out;
  int64_t max_tokens = 32, max_context = 2048;
  gkrt::SamplingOptions sampling;
};

// A number option's value in [lo, hi] (a whole number for integer options), or the error
// naming the option.
template <class T>
gkrt::StatusOr<T> number(const std::string& opt, const std::string& v, T lo, T hi) {
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  const bool whole = !std::is_integral_v<T> || d == std::floor(d);
  if (v.empty() || !end || *end || !whole || !(d >= double(lo) && d <= double(hi))) {
    return gkrt::makeError(gkrt::StatusCode::kInvalidArgument, opt, " takes ", std::is_integral_v<T> ? "a whole number" : "a number",
                           " from ", lo, " to ", hi, ", got '", v, "'");
  }
  return static_cast<T>(d);
}

gkrt::StatusOr<Args> parse(int argc, char** argv) {
  Args a;
  std::string flags;
  const std::string usage = "usage: mpirun -np N gkrt_tp_run PREFIX --input name=file.npy ... [--output-dir DIR] [--backend cpu] "
                            "[--threads T] [--runs N] [--flags FUSION_FLAGS], or mpirun -np N gkrt_tp_run --generate MODEL (--input-ids 1,2,3 | "
                            "--prompt TEXT [--chat]) [--max-tokens N] [--max-context C] [--temperature T] [--top-k K] [--top-p P] "
                            "[--seed S] [--ids-out F.npy] [--logits-out F.npy] [--backend cpu] [--threads T]";
  std::vector<std::string> args;  // --name=value as --name value
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    const size_t eq = s.find('=');
    if (s.rfind("--", 0) == 0 && eq != std::string::npos && s != "--input") {
      args.push_back(s.substr(0, eq));
      args.push_back(s.substr(eq + 1));
    } else {
      args.push_back(s);
    }
  }
  const int n = int(args.size());
  for (int i = 0; i < n; ++i) {
    const std::string s = args[size_t(i)];
    auto value = [&]() -> gkrt::StatusOr<std::string> {
      if (i + 1 >= n) return gkrt::makeError(gkrt::StatusCode::kInvalidArgument, s, " needs a value; ", usage);
      return args[size_t(++i)];
    };
    if (s == "--input") {
      ASSIGN_OR_RETURN(std::string v, value());
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) return gkrt::makeError(gkrt::StatusCode::kInvalidArgument, "--input takes name=file.npy, got '", v, "'");
      a.inputs.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (s == "--output-dir") {
      ASSIGN_OR_RETURN(a.output_dir, value());
    } else if (s == "--generate" || s == "--chat") {
      (s == "--generate" ? a.generate : a.chat) = true;
    } else if (s == "--input-ids" || s == "--prompt" || s == "--ids-out" || s == "--logits-out") {
      ASSIGN_OR_RETURN(std::string v, value());
      (s == "--input-ids" ? a.input_ids : s == "--prompt" ? a.prompt : s == "--ids-out" ? a.ids_out : a.logits_out) = v;
    } else if (s == "--max-tokens" || s == "--max-context") {
      ASSIGN_OR_RETURN(std::string v, value());
      ASSIGN_OR_RETURN((s == "--max-tokens" ? a.max_tokens : a.max_context), number<int64_t>(s, v, s == "--max-tokens" ? 0 : 1, int64_t(1) << 24));
    } else if (s == "--temperature" || s == "--top-p") {
      ASSIGN_OR_RETURN(std::string v, value());
      ASSIGN_OR_RETURN((s == "--temperature" ? a.sampling.temperature : a.sampling.top_p), number<float>(s, v, 0.0f, 1e6f));
    } else if (s == "--top-k") {
      ASSIGN_OR_RETURN(std::string v, value());
      ASSIGN_OR_RETURN(a.sampling.top_k, number<int>(s, v, 0, 1 << 30));
    } else if (s == "--seed") {
      ASSIGN_OR_RETURN(std::string v, value());
      ASSIGN_OR_RETURN(a.sampling.seed, number<uint64_t>(s, v, 0, uint64_t(1) << 53));
    } else if (s == "--backend") {
      ASSIGN_OR_RETURN(a.backend, value());
    } else if (s == "--flags") {
      ASSIGN_OR_RETURN(flags, value());
    } else if (s == "--threads" || s == "--runs") {
      ASSIGN_OR_RETURN(std::string v, value());
      ASSIGN_OR_RETURN((s == "--threads" ? a.threads : a.runs), number<int>(s, v, 1, 4096));
    } else if (!s.empty() && s[0] != '-' && a.prefix.empty()) {
      a.prefix = s;
    } else {
      return gkrt::makeError(gkrt::StatusCode::kInvalidArgument, "unknown argument '", s, "'; ", usage);
    }
  }
  if (a.prefix.empty()) return gkrt::makeError(gkrt::StatusCode::kInvalidArgument, a.generate ? "no MODEL; " : "no PREFIX; ", usage);
  if (a.generate && a.input_ids.empty() == a.prompt.empty()) {
    return gkrt::makeError(gkrt::StatusCode::kInvalidArgument, "--generate takes the prompt as text (--prompt) or as token ids (--input-ids), one of them");
  }
  if (!a.generate && (!a.input_ids.empty() || !a.prompt.empty())) {
    return gkrt::makeError(gkrt::StatusCode::kInvalidArgument, "--input-ids and --prompt go with --generate; ", usage);
  }
  RETURN_IF_ERROR(gkrt::checkSampling(a.sampling));
  ASSIGN_OR_RETURN(a.fusion, gkrt::tools::fusionOptionsFromArgs(flags, ""));
  return a;
}

gkrt::Status run(const Args& a, const std::shared_ptr<gkrt::Communicator>& comm) {
  using namespace gkrt;
  const int rank = comm->rank();
  const std::string path = a.prefix + ".rank" + std::to_string(rank) + ".gkm";
  ASSIGN_OR_RETURN(ir::Graph g, loadModelFile(path));
  const auto meta = g.metadata.find("tensor_parallel");
  const std::string want = "rank " + std::to_string(rank) + " of " + std::to_string(comm->size());
  if (meta == g.metadata.end() || meta->second != want) {
    return makeError(StatusCode::kInvalidArgument, path, " is ", meta == g.metadata.end() ? "not a rank file" : meta->second,
                     ", this process is ", want, " (gkrt shard --ranks ", comm->size(), ")");
  }
  SessionOptions o;
  o.backend = a.backend;
  o.backend_options.num_threads = a.threads;
  o.backend_options.communicator = comm;
  o.fusion = a.fusion;
  ASSIGN_OR_RETURN(auto s, Session::create(g, o));
  for (const auto& [name, file] : a.inputs) {
    ASSIGN_OR_RETURN(HostTensor t, readNpy(file));
    RETURN_IF_ERROR(s->setInput(name, t));
  }
  double best = 1e30;
  for (int k = 0; k < a.runs; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(s->run());
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  if (rank != 0) return Status::Ok();
  std::cout << "ranks " << comm->size() << ", backend " << a.backend << ", best of " << a.runs << ": " << best << " ms\n";
  if (!a.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.output_dir, ec);
    if (ec) return makeError(StatusCode::kIoError, "--output-dir: cannot create '", a.output_dir, "': ", ec.message());
  }
  std::set<std::string> written;  // names from the model are never paths (tools/output_names.h)
  for (const TensorInfo& info : s->outputs()) {
    ASSIGN_OR_RETURN(HostTensor y, s->output(info.name));
    std::cout << info.name << ": " << shapeToString(y.shape()) << "\n";
    if (a.output_dir.empty()) continue;
    const std::string file = tools::outputFileName(info.name, written);
    written.insert(file);
    RETURN_IF_ERROR(writeNpy((std::filesystem::path(a.output_dir) / file).string(), y));
  }
  return Status::Ok();
}

constexpr const char* kAnotherRankFailed = "another rank failed (its error is printed)";

// Every rank's status made one: a failure on any rank fails them all (before a collective
// that the failed rank would never join).
gkrt::Status together(gkrt::Status st) {
  int failed = st.ok() ? 0 : 1, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (st.ok() && any) return gkrt::makeError(gkrt::StatusCode::kInternal, kAnotherRankFailed);
  return st;
}

gkrt::Status generate(const Args& a, const std::shared_ptr<gkrt::Communicator>& comm) {
  using namespace gkrt;
  const bool root = comm->rank() == 0;
  const auto t_load = std::chrono::steady_clock::now();
  std::vector<int64_t> prompt, stops;
  std::optional<text::TextPrompt> tp;  // --prompt: its tokenizer, ids and stops
  GeneratorOptions go;
  go.backend = a.backend;
  go.backend_options.num_threads = a.threads;
  go.backend_options.communicator = comm;
  go.max_context = a.max_context;
  go.fusion = a.fusion;
  std::unique_ptr<Generator> gen;
  RETURN_IF_ERROR(together([&]() -> Status {
    ASSIGN_OR_RETURN(ir::Graph model, tools::loadAnyModel(a.prefix, tools::ImportArgs{}));
    if (a.prompt.empty()) {
      ASSIGN_OR_RETURN(prompt, tools::parseIdList(a.input_ids, "--input-ids"));
    } else {
      ASSIGN_OR_RETURN(tp, text::textPrompt(a.prefix, model, "", a.prompt, a.chat, ""));
      prompt = tp->ids;
      stops = tp->stops;
    }
    if (prompt.empty()) return makeError(StatusCode::kInvalidArgument, "the prompt is empty: give its text or its token ids");
    ASSIGN_OR_RETURN(gen, Generator::create(model, go));
    return Status::Ok();
  }()));
  const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count();
  if (root) {
    const ShardReport& r = gen->shardReport();
    std::fprintf(stderr, "%d ranks: %zu matmuls split by columns, %zu by rows (each then summed by AllReduce), %zu kept whole%s%s\n",
                 comm->size(), r.column_split.size(), r.row_split.size(), r.kept_whole.size(), r.kept_whole.empty() ? "" : ", as ",
                 r.kept_whole.empty() ? "" : r.kept_whole.front().c_str());
  }
  GenerateOptions opts;
  opts.max_new_tokens = a.max_tokens;
  opts.sampling = a.sampling;
  opts.stop_ids = stops;
  opts.agree = [](int64_t id) {  // rank 0's pick for every rank
    MPI_Bcast(&id, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    return id;
  };
  std::vector<int64_t> ids;
  std::vector<float> logits;
  text::TextStream stream;
  GenerateStats st;
  Status text_error = Status::Ok();
  const Status generated = together(gen->generate(prompt, opts, [&](int64_t id) {
    ids.push_back(id);
    if (!root) return true;
    if (!a.logits_out.empty()) logits.insert(logits.end(), gen->logits(), gen->logits() + gen->vocabSize());
    if (!tp) {
      std::printf(ids.size() == 1 ? "%lld" : " %lld", static_cast<long long>(id));
    } else if (std::find(stops.begin(), stops.end(), id) == stops.end()) {
      auto piece = tp->tokenizer.decodePiece(id);
      if (!piece.ok()) text_error = piece.status();
      const std::string out = piece.ok() ? stream.push(*piece) : "";
      std::fwrite(out.data(), 1, out.size(), stdout);
    }
    std::fflush(stdout);
    return true;
  }, &st));
  if (root && !ids.empty() && !generated.ok()) std::printf("\n");  // the ids so far on their own line, then the error
  RETURN_IF_ERROR(generated);
  if (!root) return Status::Ok();
  RETURN_IF_ERROR(text_error);
  const std::string rest = stream.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::printf("\n");
  std::fflush(stdout);
  if (!a.ids_out.empty()) {
    HostTensor t(DType::kInt64, {int64_t(ids.size())});
    std::copy(ids.begin(), ids.end(), static_cast<int64_t*>(t.data()));
    RETURN_IF_ERROR(writeNpy(a.ids_out, t));
  }
  if (!a.logits_out.empty()) {
    HostTensor t(DType::kFloat32, {int64_t(ids.size()), gen->vocabSize()});
    std::copy(logits.begin(), logits.end(), static_cast<float*>(t.data()));
    RETURN_IF_ERROR(writeNpy(a.logits_out, t));
  }
  auto rate = [](int64_t n, double s) { return s > 0 ? n / s : 0.0; };
  std::fprintf(stderr, "prefill: %lld tokens in %.1f ms (%.1f tokens/s); decode: %lld tokens in %.1f ms (%.1f tokens/s); "
               "%zu kernels a decode step on each of %d ranks, %s, %d threads each; loaded, split and compiled in %.1f ms\n",
               static_cast<long long>(st.prompt_tokens), st.prefill_seconds * 1e3, rate(st.prompt_tokens, st.prefill_seconds),
               static_cast<long long>(st.generated_tokens - 1), st.decode_seconds * 1e3, rate(st.generated_tokens - 1, st.decode_seconds),
               gen->decodeKernelCount(), comm->size(), a.backend.c_str(), a.threads, load_seconds * 1e3);
  return Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  auto args = parse(argc, argv);
  auto comm = gkrt::MpiCommunicator::create();
  gkrt::Status st = !args.ok() ? args.status() : !comm.ok() ? comm.status() : args->generate ? generate(*args, *comm) : run(*args, *comm);
  int failed = st.ok() ? 0 : 1, any = 0, rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // One copy of an error every rank has (rank 0's); a rank's own error when rank 0 had none of its own.
  const bool own = !st.ok() && st.message().find(kAnotherRankFailed) == std::string::npos;
  int root_own = rank == 0 && own;
  MPI_Bcast(&root_own, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (own && (rank == 0 || !root_own)) {
    const std::string line = "gkrt_tp_run" + (rank ? " (rank " + std::to_string(rank) + ")" : std::string()) + ": " + st.toString() + "\n";
    std::fputs(line.c_str(), stderr);
  }
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);  // every rank exits non-zero when one failed
  MPI_Finalize();
  return any;
}
