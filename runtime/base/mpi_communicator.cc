#include "runtime/base/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace gkrt {
namespace {

Status mpiError(int code, const char* what) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return makeError(StatusCode::kDeviceError, "MPI: ", what, " failed: ", std::string(text, static_cast<size_t>(length)));
}

}  // namespace

StatusOr<std::shared_ptr<Communicator>> MpiCommunicator::create() {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
      return makeError(StatusCode::kDeviceError, "MPI: MPI_Init_thread failed; run the program under mpirun (openmpi-bin)");
    }
    std::atexit([] {
      int finalised = 0;
      MPI_Finalized(&finalised);
      if (!finalised) MPI_Finalize();
    });
  }
  // Errors come back as codes (the default handler aborts every rank).
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  if (int e = MPI_Comm_rank(MPI_COMM_WORLD, &rank); e != MPI_SUCCESS) return mpiError(e, "MPI_Comm_rank");
  if (int e = MPI_Comm_size(MPI_COMM_WORLD, &size); e != MPI_SUCCESS) return mpiError(e, "MPI_Comm_size");
  return std::shared_ptr<Communicator>(new MpiCommunicator(rank, size));
}

Status MpiCommunicator::allReduceSum(float* data, size_t count) {
  constexpr size_t kChunk = size_t{1} << 30;
  for (size_t done = 0; done < count;) {
    const int n = static_cast<int>(std::min(kChunk, count - done));
    if (int e = MPI_Allreduce(MPI_IN_PLACE, data + done, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); e != MPI_SUCCESS) {
      return mpiError(e, "MPI_Allreduce");
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace gkrt
