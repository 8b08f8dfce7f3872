// Tensor-parallel ranks on NVIDIA GPUs: a Communicator over NCCL, so the cuda backend's
// AllReduce and MatMulAllReduce sum device memory on its stream (ncclAllReduce) instead
// of falling back to the cpu. libnccl.so.2 is opened with dlopen when the first one is
// made (the CUDA toolkit or the nccl packages ship it); built where nccl.h is found.
//
//   auto id = gkrt::cuda::NcclCommunicator::uniqueId();        // rank 0 makes it ...
//   ... hand the 128 bytes to every rank (MPI_Bcast, a file, a thread) ...
//   auto comm = gkrt::cuda::NcclCommunicator::create(rank, size, *id);  // each rank, its GPU current
//   SessionOptions o; o.backend = "cuda"; o.backend_options.communicator = *comm;
#pragma once

#include <array>
#include <memory>

#include "runtime/base/communicator.h"

namespace gkrt::cuda {

using NcclId = std::array<char, 128>;  // ncclUniqueId's bytes

class NcclCommunicator final : public Communicator {
 public:
  // Whether this build has NCCL's header (the library is still opened only at run time).
  static bool built();
  // A new communicator id (ncclGetUniqueId); kUnsupported when libnccl cannot be loaded.
  static StatusOr<NcclId> uniqueId();
  // This process's (or thread's) rank of `size`, on the CUDA device current now (make a
  // cuda backend's device current first: CudaBackend::create does). Blocks until every
  // rank has called it.
  static StatusOr<std::shared_ptr<Communicator>> create(int rank, int size, const NcclId& id);
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // Host memory: refused (the cpu fallback of a cuda session is given a host communicator).
  Status allReduceSum(float* data, size_t count) override;
  bool onDevice() const override { return true; }
  Status allReduceSumOnDevice(void* data, size_t count, void* stream) override;

 private:
  NcclCommunicator(int rank, int size, void* comm) : rank_(rank), size_(size), comm_(comm) {}
  int rank_, size_;
  void* comm_;  // ncclComm_t
};

}  // namespace gkrt::cuda
