// GGUF reader (tools/gguf/gguf_file.h). Layout (little-endian): "GGUF", version u32,
// tensor count u64, metadata count u64; each metadata entry a string key, a value type
// u32 and the value (strings are a u64 length and bytes; arrays an element type u32, a
// u64 count and the elements); each tensor info a string name, n_dims u32, n_dims u64
// dims, a ggml type u32 and a u64 offset; then padding to the alignment and the data.
#include "tools/gguf/gguf_file.h"

#include <cerrno>
#include <cstring>
#include <limits>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gkrt::gguf {
namespace {

constexpr int kMaxArrayDepth = 3;
constexpr uint32_t kMaxDims = 4;  // ggml's GGML_MAX_DIMS

// Bounded little-endian reads; an error names the field and the offset.
class Cursor {
 public:
  Cursor(const uint8_t* p, size_t size) : p_(p), size_(size) {}
  size_t pos() const { return pos_; }
  size_t left() const { return size_ - pos_; }

  template <class T> Status read(T* v, const std::string& field) {
    if (left() < sizeof(T)) return truncated(field, sizeof(T));
    std::memcpy(v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }
  // A string when the bytes hold one (false, nothing read, when they do not).
  bool readStringQuiet(std::string* s) {
    uint64_t n = 0;
    if (left() < sizeof n) return false;
    std::memcpy(&n, p_ + pos_, sizeof n);
    if (n > left() - sizeof n) return false;
    s->assign(reinterpret_cast<const char*>(p_ + pos_ + sizeof n), size_t(n));
    pos_ += sizeof n + size_t(n);
    return true;
  }
  Status readString(std::string* s, const std::string& field) {
    uint64_t n = 0;
    RETURN_IF_ERROR(read(&n, field + " (its length)"));
    if (n > left()) return truncated(field, n);
    s->assign(reinterpret_cast<const char*>(p_ + pos_), size_t(n));
    pos_ += size_t(n);
    return Status::Ok();
  }
  Status truncated(const std::string& field, uint64_t need) const {
    return makeError(StatusCode::kInvalidModel, "GGUF file is truncated or corrupted: ", field, " needs ", need, " bytes at offset ",
                     pos_, ", ", left(), " left of ", size_);
  }

 private:
  const uint8_t* p_;
  size_t size_, pos_ = 0;
};

// Bytes one element of a scalar type takes (0: not a fixed-size scalar).
size_t scalarBytes(ValueType t) {
  switch (t) {
    case ValueType::kUInt8: case ValueType::kInt8: case ValueType::kBool: return 1;
    case ValueType::kUInt16: case ValueType::kInt16: return 2;
    case ValueType::kUInt32: case ValueType::kInt32: case ValueType::kFloat32: return 4;
    case ValueType::kUInt64: case ValueType::kInt64: case ValueType::kFloat64: return 8;
    case ValueType::kString: case ValueType::kArray: return 0;
  }
  return 0;
}

template <class T> Status readAs(Cursor& c, Value* v, const std::string& field) {
  T x{};
  RETURN_IF_ERROR(c.read(&x, field));
  if constexpr (std::is_floating_point_v<T>) {
    v->f = double(x);
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    v->u = x;
    v->i = x > uint64_t(std::numeric_limits<int64_t>::max()) ? 0 : int64_t(x);
  } else {
    v->i = int64_t(x);
    v->u = uint64_t(v->i);
  }
  return Status::Ok();
}

Status readValue(Cursor& c, ValueType type, Value* v, const std::string& field, int depth) {
  v->type = type;
  switch (type) {
    case ValueType::kUInt8: return readAs<uint8_t>(c, v, field);
    case ValueType::kInt8: return readAs<int8_t>(c, v, field);
    case ValueType::kUInt16: return readAs<uint16_t>(c, v, field);
    case ValueType::kInt16: return readAs<int16_t>(c, v, field);
    case ValueType::kUInt32: return readAs<uint32_t>(c, v, field);
    case ValueType::kInt32: return readAs<int32_t>(c, v, field);
    case ValueType::kFloat32: return readAs<float>(c, v, field);
    case ValueType::kBool: return readAs<uint8_t>(c, v, field);
    case ValueType::kUInt64: return readAs<uint64_t>(c, v, field);
    case ValueType::kInt64: return readAs<int64_t>(c, v, field);
    case ValueType::kFloat64: return readAs<double>(c, v, field);
    case ValueType::kString: return c.readString(&v->s, field);
    case ValueType::kArray: {
      if (depth >= kMaxArrayDepth) {
        return makeError(StatusCode::kInvalidModel, "GGUF ", field, ": arrays nested deeper than ", kMaxArrayDepth);
      }
      uint32_t et = 0;
      uint64_t n = 0;
      RETURN_IF_ERROR(c.read(&et, field + " (element type)"));
      if (et > uint32_t(ValueType::kFloat64)) {
        return makeError(StatusCode::kInvalidModel, "GGUF ", field, ": unknown array element type ", et);
      }
      RETURN_IF_ERROR(c.read(&n, field + " (element count)"));
      v->array_type = ValueType(et);
      const size_t least = v->array_type == ValueType::kString ? 8 : v->array_type == ValueType::kArray ? 12 : scalarBytes(v->array_type);
      if (n > c.left() / least) return c.truncated(field + " (" + std::to_string(n) + " elements)", n * least);
      // Element by element without spelling the element's name (a tokenizer's arrays
      // hold one entry a token: naming each one cost more than reading the file).
      auto element = [&](uint64_t k) { return field + "[" + std::to_string(k) + "]"; };
      switch (v->array_type) {
        case ValueType::kString:
          v->strings.resize(size_t(n));
          for (uint64_t k = 0; k < n; ++k) {
            if (!c.readStringQuiet(&v->strings[size_t(k)])) return c.readString(&v->strings[size_t(k)], element(k));
          }
          break;
        case ValueType::kArray:
          v->items.resize(size_t(n));
          for (uint64_t k = 0; k < n; ++k) RETURN_IF_ERROR(readValue(c, v->array_type, &v->items[size_t(k)], element(k), depth + 1));
          break;
        default: {  // n elements of a fixed size fit: checked above
          Value x;
          const bool floating = v->array_type == ValueType::kFloat32 || v->array_type == ValueType::kFloat64;
          if (floating) v->floats.resize(size_t(n));
          else v->ints.resize(size_t(n));
          for (uint64_t k = 0; k < n; ++k) {
            RETURN_IF_ERROR(readValue(c, v->array_type, &x, field, depth + 1));
            if (floating) v->floats[size_t(k)] = x.f;
            else v->ints[size_t(k)] = x.i;
          }
        }
      }
      return Status::Ok();
    }
  }
  return makeError(StatusCode::kInvalidModel, "GGUF ", field, ": unknown value type ", uint32_t(type));
}

}  // namespace

const char* valueTypeName(ValueType t) {
  static const char* kNames[] = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
                                 "bool", "string", "array", "uint64", "int64", "float64"};
  return uint32_t(t) <= uint32_t(ValueType::kFloat64) ? kNames[uint32_t(t)] : "unknown";
}

std::string tensorTypeName(uint32_t type) {
  switch (TensorType(type)) {
    case TensorType::kF32: return "F32";
    case TensorType::kF16: return "F16";
    case TensorType::kQ4_0: return "Q4_0";
    case TensorType::kQ4_1: return "Q4_1";
    case TensorType::kQ5_0: return "Q5_0";
    case TensorType::kQ5_1: return "Q5_1";
    case TensorType::kQ8_0: return "Q8_0";
    case TensorType::kQ8_1: return "Q8_1";
    case TensorType::kQ2_K: return "Q2_K";
    case TensorType::kQ3_K: return "Q3_K";
    case TensorType::kQ4_K: return "Q4_K";
    case TensorType::kQ5_K: return "Q5_K";
    case TensorType::kQ6_K: return "Q6_K";
    case TensorType::kQ8_K: return "Q8_K";
    case TensorType::kBF16: return "BF16";
  }
  return "type " + std::to_string(type);
}

void tensorTypeBlock(uint32_t type, int64_t* values, int64_t* bytes) {
  // ggml's block layouts (values a block, bytes a block).
  switch (TensorType(type)) {
    case TensorType::kF32: *values = 1, *bytes = 4; return;
    case TensorType::kF16: case TensorType::kBF16: *values = 1, *bytes = 2; return;
    case TensorType::kQ4_0: *values = 32, *bytes = 18; return;
    case TensorType::kQ4_1: *values = 32, *bytes = 20; return;
    case TensorType::kQ5_0: *values = 32, *bytes = 22; return;
    case TensorType::kQ5_1: *values = 32, *bytes = 24; return;
    case TensorType::kQ8_0: *values = 32, *bytes = 34; return;
    case TensorType::kQ8_1: *values = 32, *bytes = 36; return;
    case TensorType::kQ2_K: *values = 256, *bytes = 84; return;
    case TensorType::kQ3_K: *values = 256, *bytes = 110; return;
    case TensorType::kQ4_K: *values = 256, *bytes = 144; return;
    case TensorType::kQ5_K: *values = 256, *bytes = 176; return;
    case TensorType::kQ6_K: *values = 256, *bytes = 210; return;
    case TensorType::kQ8_K: *values = 256, *bytes = 292; return;
  }
  *values = 0, *bytes = 0;
}

int64_t Tensor::elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

StatusOr<GgufFile> GgufFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return makeError(StatusCode::kNotFound, "cannot open GGUF file '", path, "': ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return makeError(StatusCode::kIoError, "'", path, "' is not a regular file");
  }
  const size_t size = size_t(st.st_size);
  if (size == 0) {
    ::close(fd);
    return makeError(StatusCode::kInvalidModel, "GGUF file '", path, "' is empty");
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return makeError(StatusCode::kIoError, "cannot map '", path, "': ", std::strerror(errno));
  GgufFile f;
  f.owner_ = std::shared_ptr<const void>(map, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
  f.base_ = static_cast<const uint8_t*>(map);
  f.size_ = size;
  RETURN_IF_ERROR(f.parse(path));
  return f;
}

StatusOr<GgufFile> GgufFile::fromBytes(std::string bytes, const std::string& what) {
  GgufFile f;
  auto held = std::make_shared<std::string>(std::move(bytes));
  f.base_ = reinterpret_cast<const uint8_t*>(held->data());
  f.size_ = held->size();
  f.owner_ = held;
  RETURN_IF_ERROR(f.parse(what));
  return f;
}

Status GgufFile::parse(const std::string& what) {
  Cursor c(base_, size_);
  auto fail = [&](Status s) { return s.withContext(what); };
  uint32_t magic = 0;
  if (size_ < 4 || std::memcmp(base_, "GGUF", 4) != 0) {
    return makeError(StatusCode::kInvalidModel, what, " is not a GGUF file (it does not start with \"GGUF\")");
  }
  RETURN_IF_ERROR(c.read(&magic, "the magic"));
  RETURN_IF_ERROR(c.read(&version_, "the version"));
  if (version_ != 2 && version_ != 3) {
    return makeError(StatusCode::kUnsupported, what, " is GGUF version ", version_, "; gkrt reads versions 2 and 3");
  }
  uint64_t tensor_count = 0, kv_count = 0;
  RETURN_IF_ERROR(c.read(&tensor_count, "the tensor count"));
  RETURN_IF_ERROR(c.read(&kv_count, "the metadata count"));
  if (kv_count > c.left() / 12) return fail(c.truncated(std::to_string(kv_count) + " metadata entries", kv_count * 12));
  for (uint64_t k = 0; k < kv_count; ++k) {
    std::string key;
    Status s = c.readString(&key, "metadata key " + std::to_string(k));
    uint32_t type = 0;
    if (s.ok()) s = c.read(&type, "the type of '" + key + "'");
    if (s.ok() && type > uint32_t(ValueType::kFloat64)) {
      s = makeError(StatusCode::kInvalidModel, "GGUF metadata '", key, "' has unknown value type ", type);
    }
    Value v;
    if (s.ok()) s = readValue(c, ValueType(type), &v, "metadata '" + key + "'", 0);
    if (!s.ok()) return fail(s);
    metadata_[key] = std::move(v);
  }
  metadata_end_ = c.pos();
  if (const Value* a = find("general.alignment")) {
    if (a->type != ValueType::kUInt32 || a->u == 0 || (a->u & (a->u - 1)) != 0) {
      return makeError(StatusCode::kInvalidModel, what, ": general.alignment must be a uint32 power of two, got ",
                       valueTypeName(a->type), " ", a->u);
    }
    alignment_ = a->u;
  }
  if (tensor_count > c.left() / 24) return fail(c.truncated(std::to_string(tensor_count) + " tensor infos", tensor_count * 24));
  tensors_.resize(size_t(tensor_count));
  for (uint64_t k = 0; k < tensor_count; ++k) {
    Tensor& t = tensors_[size_t(k)];
    RETURN_IF_ERROR(fail(c.readString(&t.name, "tensor info " + std::to_string(k) + " (its name)")));
    uint32_t n = 0;
    RETURN_IF_ERROR(fail(c.read(&n, "the dim count of tensor '" + t.name + "'")));
    if (n == 0 || n > kMaxDims) {
      return makeError(StatusCode::kInvalidModel, what, ": tensor '", t.name, "' has ", n, " dims; GGUF tensors have 1 to ", kMaxDims);
    }
    t.dims.resize(n);
    for (uint32_t d = 0; d < n; ++d) {
      uint64_t v = 0;
      RETURN_IF_ERROR(fail(c.read(&v, "dim " + std::to_string(d) + " of tensor '" + t.name + "'")));
      if (v == 0 || v > (uint64_t(1) << 40)) {
        return makeError(StatusCode::kInvalidModel, what, ": tensor '", t.name, "' dim ", d, " is ", v);
      }
      t.dims[d] = int64_t(v);
    }
    RETURN_IF_ERROR(fail(c.read(&t.type, "the type of tensor '" + t.name + "'")));
    RETURN_IF_ERROR(fail(c.read(&t.offset, "the offset of tensor '" + t.name + "'")));
  }
  const uint64_t data_start = (c.pos() + alignment_ - 1) / alignment_ * alignment_;
  for (Tensor& t : tensors_) {
    int64_t block_values = 0, block_bytes = 0;
    tensorTypeBlock(t.type, &block_values, &block_bytes);
    if (block_values == 0) {
      return makeError(StatusCode::kUnsupported, what, ": tensor '", t.name, "' has ggml type ", t.type, ", which gkrt cannot read");
    }
    if (t.dims[0] % block_values != 0) {
      return makeError(StatusCode::kInvalidModel, what, ": tensor '", t.name, "' rows of ", t.dims[0], " values are not whole ",
                       tensorTypeName(t.type), " blocks of ", block_values);
    }
    uint64_t bytes = uint64_t(t.dims[0] / block_values) * uint64_t(block_bytes);
    bool overflow = false;
    for (size_t d = 1; d < t.dims.size(); ++d) overflow |= __builtin_mul_overflow(bytes, uint64_t(t.dims[d]), &bytes);
    if (t.offset % alignment_ != 0) {
      return makeError(StatusCode::kInvalidModel, what, ": tensor '", t.name, "' offset ", t.offset, " is not a multiple of the alignment ",
                       alignment_);
    }
    const uint64_t room = data_start > size_ ? 0 : uint64_t(size_) - data_start;
    if (overflow || data_start > size_ || bytes > room || t.offset > room - bytes) {
      return makeError(StatusCode::kInvalidModel, what, " is truncated or corrupted: tensor '", t.name, "' (", tensorTypeName(t.type),
                       ", ", overflow ? std::string("more than 2^64") : std::to_string(bytes), " bytes at data offset ", t.offset,
                       ") ends past the end of the file (", size_, " bytes, data from ", data_start, ")");
    }
    t.bytes = bytes;
    t.data = base_ + data_start + t.offset;
  }
  return Status::Ok();
}

std::string GgufFile::metadataOnly() const {
  std::string out(reinterpret_cast<const char*>(base_), metadata_end_);
  const uint64_t no_tensors = 0;
  std::memcpy(&out[8], &no_tensors, 8);  // after the magic and the version
  return out;
}

const Tensor* GgufFile::findTensor(const std::string& name) const {
  for (const Tensor& t : tensors_) if (t.name == name) return &t;
  return nullptr;
}

const Value* GgufFile::find(const std::string& key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

std::string GgufFile::architecture() const {
  const Value* v = find("general.architecture");
  return v && v->type == ValueType::kString ? v->s : "";
}

StatusOr<int64_t> GgufFile::getInt(const std::string& key) const {
  const Value* v = find(key);
  if (!v) return makeError(StatusCode::kInvalidModel, "GGUF metadata '", key, "' is missing");
  switch (v->type) {
    case ValueType::kUInt8: case ValueType::kInt8: case ValueType::kUInt16: case ValueType::kInt16: case ValueType::kUInt32:
    case ValueType::kInt32: case ValueType::kInt64: case ValueType::kBool: return v->i;
    case ValueType::kUInt64:
      if (v->u > uint64_t(std::numeric_limits<int64_t>::max())) break;
      return v->i;
    default: break;
  }
  return makeError(StatusCode::kInvalidModel, "GGUF metadata '", key, "' is ", valueTypeName(v->type), ", not an integer");
}

StatusOr<double> GgufFile::getFloat(const std::string& key) const {
  const Value* v = find(key);
  if (!v) return makeError(StatusCode::kInvalidModel, "GGUF metadata '", key, "' is missing");
  if (v->type == ValueType::kFloat32 || v->type == ValueType::kFloat64) return v->f;
  ASSIGN_OR_RETURN(int64_t i, getInt(key));
  return double(i);
}

StatusOr<std::string> GgufFile::getString(const std::string& key) const {
  const Value* v = find(key);
  if (!v) return makeError(StatusCode::kInvalidModel, "GGUF metadata '", key, "' is missing");
  if (v->type != ValueType::kString) {
    return makeError(StatusCode::kInvalidModel, "GGUF metadata '", key, "' is ", valueTypeName(v->type), ", not a string");
  }
  return v->s;
}

}  // namespace gkrt::gguf
