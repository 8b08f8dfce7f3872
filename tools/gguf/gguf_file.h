// A GGUF file (llama.cpp's model format, versions 2 and 3) read in place: the header,
// the metadata (key -> typed value, arrays included), the tensor infos and where each
// tensor's bytes lie in the data section (aligned to general.alignment, default 32).
// Files are memory-mapped; nothing is copied but the metadata. Every count, length and
// offset is checked against the bytes there are: a truncated or inconsistent file is an
// error naming the field and the offset, never a read past the end.
//
//   ASSIGN_OR_RETURN(GgufFile f, GgufFile::open("model.gguf"));
//   f.architecture()                      // "llama", "qwen2", ...
//   ASSIGN_OR_RETURN(int64_t n, f.getInt("llama.block_count"));
//   for (const GgufTensor& t : f.tensors()) ... t.name, t.type, t.dims, t.data, t.bytes
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/ir/status.h"

namespace gkrt::gguf {

// GGUF metadata value types, numbered as the format numbers them.
enum class ValueType : uint32_t {
  kUInt8 = 0, kInt8, kUInt16, kInt16, kUInt32, kInt32, kFloat32, kBool, kString, kArray, kUInt64, kInt64, kFloat64,
};
const char* valueTypeName(ValueType t);

// One metadata value. Scalars: integers in `i` (unsigned ones that fit) or `u`, floats
// in `f`, strings in `s`. Arrays by `array_type`, flat where a tokenizer's are large (one
// entry a token): strings in `strings`, integers and bools in `ints` (as `i`), floats in
// `floats`; arrays of arrays in `items`.
struct Value {
  ValueType type = ValueType::kUInt8;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  std::string s;
  ValueType array_type = ValueType::kUInt8;
  std::vector<std::string> strings;  // string arrays
  std::vector<int64_t> ints;         // integer and bool arrays
  std::vector<double> floats;        // float32/float64 arrays
  std::vector<Value> items;          // arrays of arrays
  size_t arraySize() const {
    switch (array_type) {
      case ValueType::kString: return strings.size();
      case ValueType::kFloat32: case ValueType::kFloat64: return floats.size();
      case ValueType::kArray: return items.size();
      default: return ints.size();
    }
  }
};

// ggml tensor types gkrt knows by name (others keep their number).
enum class TensorType : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ8_1 = 9, kQ2_K = 10, kQ3_K = 11,
  kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kQ8_K = 15, kBF16 = 30,
};
// "Q4_1", ... or "type N"; values a block holds and its bytes (0, 0 for unknown types).
std::string tensorTypeName(uint32_t type);
void tensorTypeBlock(uint32_t type, int64_t* values, int64_t* bytes);

struct Tensor {
  std::string name;
  std::vector<int64_t> dims;  // ggml order: dims[0] varies fastest (a row), as the file stores them
  uint32_t type = 0;
  uint64_t offset = 0;        // from the start of the data section
  uint64_t bytes = 0;
  const uint8_t* data = nullptr;
  int64_t elements() const;
};

class GgufFile {
 public:
  static StatusOr<GgufFile> open(const std::string& path);
  // The same from bytes in memory (kept by the GgufFile; fuzzing, tests).
  static StatusOr<GgufFile> fromBytes(std::string bytes, const std::string& what = "gguf bytes");

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  size_t fileSize() const { return size_; }
  const std::map<std::string, Value>& metadata() const { return metadata_; }
  const std::vector<Tensor>& tensors() const { return tensors_; }
  const Tensor* findTensor(const std::string& name) const;
  const Value* find(const std::string& key) const;
  std::string architecture() const;  // general.architecture, "" if absent

  // Typed reads naming the key on a miss or a type that does not fit.
  StatusOr<int64_t> getInt(const std::string& key) const;
  StatusOr<double> getFloat(const std::string& key) const;
  StatusOr<std::string> getString(const std::string& key) const;

  // The file's header and metadata as a GGUF file of its own with no tensors (what a
  // model converted from it keeps: its tokenizer, hyper-parameters, chat template).
  std::string metadataOnly() const;

 private:
  Status parse(const std::string& what);

  std::shared_ptr<const void> owner_;  // the mapping or the bytes
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  size_t metadata_end_ = 0;  // where the tensor infos start
  std::map<std::string, Value> metadata_;
  std::vector<Tensor> tensors_;
};

}  // namespace gkrt::gguf
