#include "runtime/base/communicator.h"

#include <algorithm>

namespace gkrt {
namespace {

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(InProcessGroup* group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  Status allReduceSum(float* data, size_t count) override { return group_->allReduceSum(rank_, data, count); }

 private:
  InProcessGroup* group_;
  int rank_;
};

}  // namespace

InProcessGroup::InProcessGroup(int ranks) : ranks_(std::max(ranks, 1)), buffers_(ranks_), counts_(ranks_) {}

std::shared_ptr<Communicator> InProcessGroup::communicator(int rank) {
  return std::make_shared<InProcessCommunicator>(this, rank);
}

void InProcessGroup::barrier() {
  std::unique_lock<std::mutex> lock(mutex_);
  const unsigned long gen = generation_;
  if (++arrived_ == ranks_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  cv_.wait(lock, [&] { return generation_ != gen; });
}

// Each rank publishes its buffer; each sums its slice of every rank's buffers into the
// shared sum; each copies the whole sum back. Three barriers keep the phases apart.
Status InProcessGroup::allReduceSum(int rank, float* data, size_t count) {
  if (rank < 0 || rank >= ranks_) {
    return makeError(StatusCode::kInvalidArgument, "AllReduce: rank ", rank, " is outside the group of ", ranks_);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    buffers_[rank] = data;
    counts_[rank] = count;
    if (sum_.size() < count) sum_.resize(count);
  }
  barrier();
  for (int r = 0; r < ranks_; ++r) {
    if (counts_[r] != count) {
      barrier();
      barrier();
      return makeError(StatusCode::kInvalidArgument, "AllReduce: rank ", r, " reduces ", counts_[r], " floats, rank ",
                       rank, " ", count, "; every rank needs the same tensor size");
    }
  }
  const size_t begin = count * rank / ranks_, end = count * (rank + 1) / ranks_;
  for (size_t i = begin; i < end; ++i) {
    float s = 0.0f;
    for (int r = 0; r < ranks_; ++r) s += buffers_[r][i];
    sum_[i] = s;
  }
  barrier();
  std::copy(sum_.begin(), sum_.begin() + count, data);
  barrier();
  return Status::Ok();
}

}  // namespace gkrt
