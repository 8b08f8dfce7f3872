// Memory for the large constant data kernels pack once (weights in panels): for 2 MiB
// and more, 2 MiB-aligned and marked for transparent huge pages before it is first
// touched (Linux madvise; THP is often "madvise" only), so a decode step streaming
// hundreds of MB walks 512x fewer pages. Zero-filled. Elsewhere plain aligned memory.
#pragma once

#include <cstddef>
#include <memory>

namespace gkrt::cpu {

class LargeBuffer {
 public:
  LargeBuffer() = default;
  explicit LargeBuffer(size_t bytes);
  void* data() const { return data_.get(); }
  size_t size() const { return bytes_; }
  template <class T> T* as() const { return static_cast<T*>(data_.get()); }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> data_;
  size_t bytes_ = 0;
};

}  // namespace gkrt::cpu
