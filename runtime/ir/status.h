// Status: the error type returned by everything that can fail on bad input.
//
//   Status s = loadModel(path, &graph);
//   if (!s.ok()) std::cerr << s.message();
//
//   StatusOr<Graph> g = loadModelFile(path);
//   RETURN_IF_ERROR(g.status());
//
// No exception crosses the public API; a Status names the thing and the fix.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

namespace gkrt {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad user input: flag, shape, name
  kInvalidModel,     // the model file is malformed or inconsistent
  kUnsupported,      // valid, but not implemented by this runtime/backend
  kNotFound,         // a named thing (file, backend, tensor) does not exist
  kIoError,
  kDeviceError,
  kInternal,
};

const char* statusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid model: node 3 (Add): ..." for logs and CLI output.
  std::string toString() const;
  // Prefix context ("loading model.gkm: ") while keeping the code.
  Status withContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design
  StatusOr(T value) : value_(std::move(value)) {}          // NOLINT
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // Reading the value of an error is a programming error: it aborts with the message.
  T& value() & { check(); return *value_; }
  const T& value() const& { check(); return *value_; }
  T&& value() && { check(); return std::move(*value_); }
  T* operator->() { check(); return &*value_; }
  const T* operator->() const { check(); return &*value_; }
  T& operator*() { check(); return *value_; }
  const T& operator*() const { check(); return *value_; }

 private:
  void check() const {
    if (!value_) {
      std::fprintf(stderr, "gkrt: StatusOr value read from an error: %s\n", status_.toString().c_str());
      std::abort();
    }
  }

  Status status_;
  std::optional<T> value_;
};

// Builds a message from stream pieces: errorf(kInvalidModel, "tensor ", i, " has ...").
template <typename... Args>
Status makeError(StatusCode code, const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return Status(code, os.str());
}

}  // namespace gkrt

#define GKRT_CONCAT_INNER(a, b) a##b
#define GKRT_CONCAT(a, b) GKRT_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                   \
  do {                                          \
    ::gkrt::Status gkrt_status_ = (expr);       \
    if (!gkrt_status_.ok()) return gkrt_status_; \
  } while (0)

#define ASSIGN_OR_RETURN(lhs, expr) ASSIGN_OR_RETURN_IMPL(GKRT_CONCAT(gkrt_sor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
