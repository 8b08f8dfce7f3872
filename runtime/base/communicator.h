// Collective communication between the ranks of a tensor-parallel run: what the AllReduce
// and MatMulAllReduce kernels call. One device needs none (AllReduce is then x itself).
//
//   InProcessGroup group(4);                        // 4 threads act as 4 ranks
//   BackendOptions o;
//   o.communicator = group.communicator(rank);      // one per rank's session
//   ... each thread runs its session; AllReduce sums over the 4.
//
// The NCCL seam: a multi-GPU backend implements Communicator with NCCL (the CUDA toolkit
// ships it): ncclCommInitRank(rank, size, id) at construction, allReduceSum() as
// ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, stream) on the backend's
// stream. Kernels only see this interface, so nothing else changes.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/ir/status.h"

namespace gkrt {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank calls it with `count` floats; each ends with the element-wise sum over
  // all ranks. Blocks until every rank has called it.
  virtual Status allReduceSum(float* data, size_t count) = 0;
};

// N ranks in one process, each on its own thread: a shared buffer and a barrier.
class InProcessGroup {
 public:
  explicit InProcessGroup(int ranks);
  int size() const { return ranks_; }
  std::shared_ptr<Communicator> communicator(int rank);

  // Used by the ranks' communicators.
  Status allReduceSum(int rank, float* data, size_t count);

 private:
  void barrier();

  int ranks_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  unsigned long generation_ = 0;
  std::vector<float*> buffers_;
  std::vector<size_t> counts_;
  std::vector<float> sum_;
};

}  // namespace gkrt
