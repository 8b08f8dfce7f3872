#include "backends/cuda/nccl_communicator.h"

#include <cstring>
#include <mutex>

#include "backends/cuda/cuda_library.h"

#ifdef GKRT_HAVE_NCCL
#include <nccl.h>
#endif

namespace gkrt::cuda {

#ifndef GKRT_HAVE_NCCL

bool NcclCommunicator::built() { return false; }
StatusOr<NcclId> NcclCommunicator::uniqueId() {
  return makeError(StatusCode::kUnsupported, "cuda: this build has no NCCL (the CUDA toolkit had no nccl.h)");
}
StatusOr<std::shared_ptr<Communicator>> NcclCommunicator::create(int, int, const NcclId&) { return uniqueId().status(); }
NcclCommunicator::~NcclCommunicator() = default;
Status NcclCommunicator::allReduceSum(float*, size_t) { return uniqueId().status(); }
Status NcclCommunicator::allReduceSumOnDevice(void*, size_t, void*) { return uniqueId().status(); }

#else

namespace {

struct Nccl {
  decltype(&::ncclGetUniqueId) getUniqueId;
  decltype(&::ncclCommInitRank) commInitRank;
  decltype(&::ncclCommDestroy) commDestroy;
  decltype(&::ncclAllReduce) allReduce;
  decltype(&::ncclGetErrorString) errorString;
};

StatusOr<const Nccl*> nccl() {
  static std::mutex mutex;
  static Nccl n;
  static bool loaded = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded) return &n;
  ASSIGN_OR_RETURN(void* lib, openLibrary({"libnccl.so.2", "libnccl.so"},
                                          "install NCCL 2 (the CUDA toolkit's or libnccl2) or add its lib folder to LD_LIBRARY_PATH"));
  Symbols sym{lib, ""};
  sym(n.getUniqueId, "ncclGetUniqueId");
  sym(n.commInitRank, "ncclCommInitRank");
  sym(n.commDestroy, "ncclCommDestroy");
  sym(n.allReduce, "ncclAllReduce");
  sym(n.errorString, "ncclGetErrorString");
  if (!sym.missing.empty()) return makeError(StatusCode::kUnsupported, "cuda: libnccl.so.2 lacks ", sym.missing, "; install NCCL 2");
  loaded = true;
  return &n;
}

Status ncclCheck(const Nccl& n, ncclResult_t r, const std::string& what) {
  if (r == ncclSuccess) return Status::Ok();
  return makeError(StatusCode::kDeviceError, "cuda: NCCL ", what, " failed (", n.errorString(r), ")");
}

static_assert(sizeof(ncclUniqueId) == sizeof(NcclId), "ncclUniqueId is 128 bytes");

}  // namespace

bool NcclCommunicator::built() { return true; }

StatusOr<NcclId> NcclCommunicator::uniqueId() {
  ASSIGN_OR_RETURN(const Nccl* n, nccl());
  ncclUniqueId id;
  RETURN_IF_ERROR(ncclCheck(*n, n->getUniqueId(&id), "making a communicator id"));
  NcclId out;
  std::memcpy(out.data(), &id, out.size());
  return out;
}

StatusOr<std::shared_ptr<Communicator>> NcclCommunicator::create(int rank, int size, const NcclId& id) {
  if (size < 1 || rank < 0 || rank >= size) {
    return makeError(StatusCode::kInvalidArgument, "cuda: NCCL rank ", rank, " of ", size, " is not a rank (0 <= rank < size)");
  }
  ASSIGN_OR_RETURN(const Nccl* n, nccl());
  ncclUniqueId nid;
  std::memcpy(&nid, id.data(), id.size());
  ncclComm_t comm = nullptr;
  RETURN_IF_ERROR(ncclCheck(*n, n->commInitRank(&comm, size, nid, rank), "joining rank " + std::to_string(rank) + " of " + std::to_string(size)));
  return std::shared_ptr<Communicator>(new NcclCommunicator(rank, size, comm));
}

NcclCommunicator::~NcclCommunicator() {
  if (auto n = nccl(); n.ok() && comm_) (*n)->commDestroy(static_cast<ncclComm_t>(comm_));
}

Status NcclCommunicator::allReduceSum(float*, size_t) {
  return makeError(StatusCode::kUnsupported, "cuda: the NCCL communicator sums device memory; the cpu fallback needs a host "
                   "communicator (MPI or in-process)");
}

Status NcclCommunicator::allReduceSumOnDevice(void* data, size_t count, void* stream) {
  ASSIGN_OR_RETURN(const Nccl* n, nccl());
  return ncclCheck(*n, n->allReduce(data, data, count, ncclFloat32, ncclSum, static_cast<ncclComm_t>(comm_),
                                    static_cast<cudaStream_t>(stream)),
                   "AllReduce of " + std::to_string(count) + " floats");
}

#endif

}  // namespace gkrt::cuda
