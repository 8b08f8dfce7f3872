// Tensor-parallel tests on threads: a model split for N ranks (fusion/tensor_parallel_shard.h),
// each rank's graph in a session over its rank's in-process communicator, and the ranks
// run at once (their AllReduces wait for each other).
//
//   InProcessGroup group(2);
//   ASSIGN_OR_RETURN(RankSessions rs, makeRankSessions(model, group, "cpu", fusion));
//   std::vector<Status> st = runOnRanks(2, [&](int r) { return rs.sessions[r]->run(); });
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fusion/tensor_parallel_shard.h"
#include "runtime/base/communicator.h"
#include "runtime/session.h"

namespace gkrt::testing {

struct RankSessions {
  std::vector<ShardReport> reports;
  std::vector<ir::Graph> graphs;
  std::vector<std::unique_ptr<Session>> sessions;
};

// Every rank of `group` (its size the ranks): the graph, what went where, and a session on
// `backend` (one thread) with `fusion`; an error names the rank.
inline StatusOr<RankSessions> makeRankSessions(const ir::Graph& model, InProcessGroup& group, const std::string& backend,
                                               const FusionOptions& fusion) {
  RankSessions rs;
  const int ranks = group.size();
  for (int r = 0; r < ranks; ++r) {
    ShardReport report;
    auto g = shardForRank(model, r, ranks, &report);
    if (!g.ok()) return g.status().withContext("rank " + std::to_string(r));
    SessionOptions o;
    o.backend = backend;
    o.backend_options.num_threads = 1;
    o.backend_options.communicator = group.communicator(r);
    o.fusion = fusion;
    auto s = Session::create(*g, o);
    if (!s.ok()) return s.status().withContext("rank " + std::to_string(r));
    rs.reports.push_back(std::move(report));
    rs.graphs.push_back(std::move(*g));
    rs.sessions.push_back(std::move(*s));
  }
  return rs;
}

// fn(r) for every rank at once, one thread each; each rank's status.
inline std::vector<Status> runOnRanks(int ranks, const std::function<Status(int)>& fn) {
  std::vector<Status> status(static_cast<size_t>(ranks), Status::Ok());
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back([&, r] { status[static_cast<size_t>(r)] = fn(r); });
  for (std::thread& t : threads) t.join();
  return status;
}

}  // namespace gkrt::testing
