#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "gkm_generated.h"
#include "runtime/attrs_codec.h"
#include "runtime/ir/op_def.h"
#include "runtime/model_io.h"

namespace gkrt {
namespace {

struct Bytes {  // a loaded file or buffer, kept alive by the constants that use it
  const uint8_t* data;
  size_t size;
  std::shared_ptr<const void> owner;
};

class GraphDecoder {
 public:
  GraphDecoder(const fb::Model& model, const Bytes& bytes, const ModelLimits& limits)
      : model_(model), bytes_(bytes), limits_(limits) {}

  Status decode(const fb::Graph& fg, ir::Graph& g, const std::string& where) {
    const auto* tensors = fg.tensors();
    const size_t nt = tensors ? tensors->size() : 0;
    RETURN_IF_ERROR(checkGraphSize(fg.nodes() ? fg.nodes()->size() : 0, nt, limits_).withContext(where.empty() ? "model" : where));
    for (size_t i = 0; i < nt; ++i) {
      ir::Tensor t;
      RETURN_IF_ERROR(decodeTensor(*tensors->Get(static_cast<flatbuffers::uoffset_t>(i)), t)
                          .withContext(where + "tensor " + std::to_string(i) + tensorName(tensors->Get(i))));
      g.addTensor(std::move(t));
    }
    if (const auto* nodes = fg.nodes()) {
      for (flatbuffers::uoffset_t i = 0; i < nodes->size(); ++i) {
        ir::Node n;
        const std::string who = where + "node " + std::to_string(i) + nodeName(nodes->Get(i));
        RETURN_IF_ERROR(decodeNode(*nodes->Get(i), n, who));
        g.addNode(std::move(n));
      }
    }
    if (fg.inputs()) g.inputs.assign(fg.inputs()->begin(), fg.inputs()->end());
    if (fg.outputs()) g.outputs.assign(fg.outputs()->begin(), fg.outputs()->end());
    return Status::Ok();
  }

 private:
  static std::string tensorName(const fb::Tensor* t) {
    return t && t->name() ? " '" + t->name()->str() + "'" : "";
  }
  static std::string nodeName(const fb::Node* n) {
    return n && n->name() && n->name()->size() ? " '" + n->name()->str() + "'" : "";
  }

  Status decodeTensor(const fb::Tensor& ft, ir::Tensor& t) {
    if (ft.name()) t.name = ft.name()->str();
    const int dt = static_cast<int>(ft.dtype());
    if (dt < 0 || dt >= kNumDTypes) {
      return makeError(StatusCode::kInvalidModel, "dtype ", dt, " is unknown (valid 0..", kNumDTypes - 1, ")");
    }
    t.dtype = static_cast<DType>(dt);
    if (ft.shape()) {
      for (int64_t d : copyInt64Vector(ft.shape())) {
        if (d < kUnknownDim) {
          return makeError(StatusCode::kInvalidModel, "shape has dim ", d, "; dims are >= 0, or -1 when unknown");
        }
        t.shape.push_back(d);
      }
    }
    if (ft.dim_symbols() && ft.dim_symbols()->size()) {
      if (ft.dim_symbols()->size() != t.shape.size()) {
        return makeError(StatusCode::kInvalidModel, "has ", ft.dim_symbols()->size(), " dim symbols for rank ",
                         t.shape.size());
      }
      for (const auto* s : *ft.dim_symbols()) t.dim_symbols.push_back(s ? s->str() : "");
    }
    if (ft.buffer() < 0) return Status::Ok();
    const auto* buffers = model_.buffers();
    if (!buffers || static_cast<size_t>(ft.buffer()) >= buffers->size()) {
      return makeError(StatusCode::kInvalidModel, "refers to buffer ", ft.buffer(), ", but the model has ",
                       buffers ? buffers->size() : 0, " buffers");
    }
    auto count = checkedNumElements(t.shape);
    if (!count.ok()) return count.status().withContext("constant");
    const size_t need = static_cast<size_t>(*count) * dtypeSize(t.dtype);
    const auto* data = buffers->Get(ft.buffer())->data();
    const size_t have = data ? data->size() : 0;
    if (have != need) {
      return makeError(StatusCode::kInvalidModel, "buffer ", ft.buffer(), " is ", have, " bytes, shape ",
                       shapeToString(t.shape), " ", dtypeName(t.dtype), " needs ", need,
                       bitWidth(t.dtype) < 8 ? " (one element per byte, unpacked)" : "", "; re-export the model");
    }
    const uint8_t* p = data ? data->data() : nullptr;
    RETURN_IF_ERROR(checkNarrowElements(p, have, t.dtype));
    if (p && reinterpret_cast<uintptr_t>(p) % 64 == 0) {
      auto c = std::make_shared<ir::ConstData>();
      c->data = p;
      c->size = have;
      c->owner = bytes_.owner;
      t.constant = c;
    } else {
      t.constant = ir::ConstData::copyOf(p, have);  // unaligned source: copy once
    }
    return Status::Ok();
  }

  // 4-/2-bit elements take one byte each: a byte outside the type's range is a corrupt file.
  static Status checkNarrowElements(const uint8_t* p, size_t n, DType t) {
    if (bitWidth(t) >= 8 || !p) return Status::Ok();
    for (size_t i = 0; i < n; ++i) {
      const int v = t == DType::kInt4 || t == DType::kInt2 ? static_cast<int8_t>(p[i]) : p[i];
      const int lo = isNarrowInteger(t) ? narrowIntMin(t) : 0, hi = isNarrowInteger(t) ? narrowIntMax(t) : 15;
      if (v < lo || v > hi) {
        return makeError(StatusCode::kInvalidModel, dtypeName(t), " element ", i, " is ", v, ", outside ", lo, "..", hi,
                         " (one element per byte); the file is corrupted, re-export the model");
      }
    }
    return Status::Ok();
  }

  Status decodeNode(const fb::Node& fn, ir::Node& n, const std::string& who) {
    if (fn.name()) n.name = fn.name()->str();
    const std::string op_name = fn.op()->str();
    n.op = findOp(op_name);
    if (!n.op && kMinimalOpSet) {
      return makeError(StatusCode::kUnsupported, who, ": op '", op_name, "' is not in this minimal build (it has ",
                       allOps().size(), " ops); rebuild with this model's list: gkrt convert MODEL.onnx -o MODEL.gkm "
                       "--emit-op-list ops.txt, then cmake -DGKRT_OP_LIST=ops.txt");
    }
    if (!n.op) {
      return makeError(StatusCode::kInvalidModel, who, ": unknown op '", op_name, "' (did you mean '",
                       closestOpName(op_name), "'? `gkrt ops` lists every op)");
    }
    auto attrs = decodeAttrs(static_cast<uint8_t>(fn.attrs_type()), fn.attrs());
    if (!attrs.ok()) return attrs.status().withContext(who);
    n.attrs = std::move(attrs).value();
    // Files from before IfAttrs hold If nodes without attributes: both branches built.
    if (n.attrs.kind() == AttrKind::kNone && n.op->attr_kind == AttrKind::kIf) n.attrs = IfAttrs{};
    if (fn.inputs()) n.inputs.assign(fn.inputs()->begin(), fn.inputs()->end());
    if (fn.outputs()) n.outputs.assign(fn.outputs()->begin(), fn.outputs()->end());
    if (fn.subgraph()) {
      n.subgraph = std::make_shared<ir::Graph>();
      RETURN_IF_ERROR(decode(*fn.subgraph(), *n.subgraph, who + " subgraph: "));
    }
    if (const auto* subs = fn.subgraphs()) {
      for (flatbuffers::uoffset_t k = 0; k < subs->size(); ++k) {
        n.subgraphs.push_back(std::make_shared<ir::Graph>());
        RETURN_IF_ERROR(decode(*subs->Get(k), *n.subgraphs.back(), who + " subgraph " + std::to_string(k) + ": "));
      }
    }
    return Status::Ok();
  }

  const fb::Model& model_;
  const Bytes& bytes_;
  const ModelLimits& limits_;
};

// Declared static shapes of produced tensors must agree with inference.
Status checkDeclaredShapes(const ir::Graph& g, const std::vector<Shape>& declared) {
  const std::vector<int> producer = g.producers();
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    if (producer[t] < 0 || !isStatic(declared[t]) || declared[t].empty()) continue;
    if (isStatic(g.tensors[t].shape) && declared[t] != g.tensors[t].shape) {
      return makeError(StatusCode::kInvalidModel, ir::describeTensor(g, static_cast<int>(t)), " is declared ",
                       shapeToString(declared[t]), " but ", ir::describeNode(g, producer[t]), " produces ",
                       shapeToString(g.tensors[t].shape));
    }
  }
  return Status::Ok();
}

StatusOr<ir::Graph> loadBytes(const Bytes& bytes, const ModelLimits& limits) {
  if (bytes.size < 8) {
    return makeError(StatusCode::kInvalidModel, "the file is ", bytes.size, " bytes, too short to be a gkrt model");
  }
  if (!flatbuffers::BufferHasIdentifier(bytes.data, kModelFileIdentifier)) {
    std::string id(reinterpret_cast<const char*>(bytes.data) + 4, 4);
    for (char& ch : id) if (ch < 32 || ch > 126) ch = '?';
    return makeError(StatusCode::kInvalidModel, "not a gkrt model: file identifier is '", id, "', expected '",
                     kModelFileIdentifier, "' (convert ONNX files with `gkrt convert`)");
  }
  flatbuffers::Verifier::Options opts;
  opts.max_depth = 64;
  opts.max_tables = 10'000'000;
  flatbuffers::Verifier verifier(bytes.data, bytes.size, opts);
  if (!fb::VerifyModelBuffer(verifier)) {
    return makeError(StatusCode::kInvalidModel,
                     "the file is corrupted or truncated (flatbuffer verification failed); re-export the model");
  }
  const fb::Model* model = fb::GetModel(bytes.data);
  if (model->schema_version() == 0) {
    return makeError(StatusCode::kInvalidModel, "the model has no schema version");
  }
  if (model->schema_version() > kSchemaVersion) {
    return makeError(StatusCode::kInvalidModel, "the model uses schema version ", model->schema_version(),
                     ", newer than this gkrt supports (", kSchemaVersion, "); upgrade gkrt");
  }
  ir::Graph g;
  RETURN_IF_ERROR(GraphDecoder(*model, bytes, limits).decode(*model->graph(), g, ""));
  if (const auto* md = model->metadata()) {
    for (const auto* e : *md) g.metadata[e->key()->str()] = e->value() ? e->value()->str() : "";
  }
  if (const auto* gm = model->gguf_metadata()) g.metadata[kGgufMetadataKey].assign(reinterpret_cast<const char*>(gm->data()), gm->size());
  RETURN_IF_ERROR(ir::validateGraph(g));
  RETURN_IF_ERROR(checkGraphDepth(g, limits));
  std::vector<Shape> declared;
  for (const ir::Tensor& t : g.tensors) declared.push_back(t.shape);
  bool static_inputs = true;
  for (int t : g.inputs) static_inputs = static_inputs && isStatic(g.tensors[t].shape);
  if (static_inputs) {
    RETURN_IF_ERROR(ir::inferShapes(g));
    RETURN_IF_ERROR(checkDeclaredShapes(g, declared));
  }
  return g;
}

}  // namespace

StatusOr<ir::Graph> loadModelBuffer(const void* data, size_t size) { return loadModelBuffer(data, size, ModelLimits{}); }

StatusOr<ir::Graph> loadModelFile(const std::string& path) { return loadModelFile(path, ModelLimits{}); }

StatusOr<ir::Graph> loadModelBuffer(const void* data, size_t size, const ModelLimits& limits) {
  auto copy = std::shared_ptr<uint8_t>(static_cast<uint8_t*>(std::aligned_alloc(64, (size + 63) / 64 * 64 + 64)),
                                       [](uint8_t* p) { std::free(p); });
  if (!copy) return makeError(StatusCode::kIoError, "out of memory copying a ", size, "-byte model");
  if (size) std::memcpy(copy.get(), data, size);
  return loadBytes({copy.get(), size, copy}, limits);
}

StatusOr<ir::Graph> loadModelFile(const std::string& path, const ModelLimits& limits) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return makeError(StatusCode::kNotFound, "cannot open model '", path, "': ", std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return makeError(StatusCode::kIoError, "'", path, "' is not a regular file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return makeError(StatusCode::kInvalidModel, "model '", path, "' is empty");
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return makeError(StatusCode::kIoError, "cannot map '", path, "': ", std::strerror(errno));
  std::shared_ptr<const void> owner(map, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
  auto g = loadBytes({static_cast<const uint8_t*>(map), size, owner}, limits);
  if (!g.ok()) return g.status().withContext(path);
  return g;
}

}  // namespace gkrt
