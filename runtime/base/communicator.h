// Collective communication between the ranks of a tensor-parallel run: what the AllReduce
// and MatMulAllReduce kernels call. One device needs none (AllReduce is then x itself).
//
//   InProcessGroup group(4);                        // 4 threads act as 4 ranks
//   BackendOptions o;
//   o.communicator = group.communicator(rank);      // one per rank's session
//   ... each thread runs its session; AllReduce sums over the 4.
//
// Device ranks: backends/cuda/nccl_communicator.h implements it with NCCL (dlopen'ed);
// its onDevice() is true and the cuda backend sums device memory on its stream through
// allReduceSumOnDevice, so AllReduce and MatMulAllReduce stay on the GPU.
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
  // A device communicator: `data` is device memory of the backend that holds it, summed in
  // place in the order of `stream` (the backend's stream handle). Host ones refuse it.
  virtual bool onDevice() const { return false; }
  virtual Status allReduceSumOnDevice(void* data, size_t count, void* stream) {
    return makeError(StatusCode::kUnsupported, "this communicator sums host memory only");
  }
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
