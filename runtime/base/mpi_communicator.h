// Tensor-parallel ranks in separate processes (or hosts): a Communicator over MPI, so
// the AllReduce and MatMulAllReduce kernels sum through MPI_Allreduce instead of the
// in-process group. Built as its own library, gkrt_mpi, where CMake finds MPI (Debian:
// libopenmpi-dev; mpirun from openmpi-bin); the gkrt library itself never links MPI.
//
//   MPI_Init(&argc, &argv);                          // (or MpiCommunicator::create does it)
//   auto comm = gkrt::MpiCommunicator::create();     // this process's rank of MPI_COMM_WORLD
//   SessionOptions o;
//   o.backend_options.communicator = *comm;          // this rank's slice of the model
//   ... run; AllReduce sums over every rank;  mpirun -np 2 ./app
#pragma once

#include <memory>

#include "runtime/base/communicator.h"

namespace gkrt {

class MpiCommunicator final : public Communicator {
 public:
  // MPI_COMM_WORLD's rank and size; initialises MPI (threads: funneled) when the program
  // has not, and finalises it at exit in that case. kDeviceError when MPI cannot start.
  static StatusOr<std::shared_ptr<Communicator>> create();
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // MPI_Allreduce in place, in chunks of at most 2^30 floats (MPI counts are int).
  Status allReduceSum(float* data, size_t count) override;

 private:
  MpiCommunicator(int rank, int size) : rank_(rank), size_(size) {}
  int rank_, size_;
};

}  // namespace gkrt
