// gkrt_tp_run: runs the rank files `gkrt shard` writes, one rank per MPI process.
//
//   gkrt shard model.onnx --ranks 2 -o /tmp/m
//   mpirun -np 2 gkrt_tp_run /tmp/m --input x=x.npy [--output-dir DIR] [--backend cpu] [--threads 1] [--runs N]
//
// Each process loads PREFIX.rank<its MPI rank>.gkm and runs it with an MPI communicator
// (runtime/base/mpi_communicator.h), so its AllReduce nodes sum over the ranks; every rank
// ends with the whole model's outputs. Rank 0 prints them (shape and first values) and
// writes NAME.npy into --output-dir. Built where CMake finds MPI.
#include <mpi.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "runtime/base/mpi_communicator.h"
#include "runtime/model_io.h"
#include "runtime/session.h"
#include "tools/npy.h"
#include "tools/output_names.h"

namespace {

struct Args {
  std::string prefix, output_dir, backend = "cpu";
  std::vector<std::pair<std::string, std::string>> inputs;  // name, .npy
  int threads = 1, runs = 1;
};

gkrt::StatusOr<Args> parse(int argc, char** argv) {
  Args a;
  const std::string usage = "usage: mpirun -np N gkrt_tp_run PREFIX --input name=file.npy ... [--output-dir DIR] [--backend cpu] "
                            "[--threads T] [--runs N]";
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&]() -> gkrt::StatusOr<std::string> {
      if (i + 1 >= argc) return gkrt::makeError(gkrt::StatusCode::kInvalidArgument, s, " needs a value; ", usage);
      return std::string(argv[++i]);
    };
    if (s == "--input") {
      ASSIGN_OR_RETURN(std::string v, value());
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) return gkrt::makeError(gkrt::StatusCode::kInvalidArgument, "--input takes name=file.npy, got '", v, "'");
      a.inputs.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (s == "--output-dir") {
      ASSIGN_OR_RETURN(a.output_dir, value());
    } else if (s == "--backend") {
      ASSIGN_OR_RETURN(a.backend, value());
    } else if (s == "--threads" || s == "--runs") {
      ASSIGN_OR_RETURN(std::string v, value());
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (!end || *end || n < 1 || n > 4096) return gkrt::makeError(gkrt::StatusCode::kInvalidArgument, s, " takes a count from 1, got '", v, "'");
      (s == "--threads" ? a.threads : a.runs) = int(n);
    } else if (!s.empty() && s[0] != '-' && a.prefix.empty()) {
      a.prefix = s;
    } else {
      return gkrt::makeError(gkrt::StatusCode::kInvalidArgument, "unknown argument '", s, "'; ", usage);
    }
  }
  if (a.prefix.empty()) return gkrt::makeError(gkrt::StatusCode::kInvalidArgument, "no PREFIX; ", usage);
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

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  auto args = parse(argc, argv);
  auto comm = gkrt::MpiCommunicator::create();
  gkrt::Status st = !args.ok() ? args.status() : !comm.ok() ? comm.status() : run(*args, *comm);
  int failed = st.ok() ? 0 : 1, any = 0;
  if (!st.ok()) std::cerr << "gkrt_tp_run: " << st.toString() << "\n";
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);  // every rank exits non-zero when one failed
  MPI_Finalize();
  return any;
}
