#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "gkm_generated.h"
#include "runtime/attrs_codec.h"
#include "runtime/ir/op_def.h"
#include "runtime/model_io.h"

namespace gkrt {
namespace {

class GraphEncoder {
 public:
  explicit GraphEncoder(flatbuffers::FlatBufferBuilder& fbb) : fbb_(fbb) {}

  flatbuffers::Offset<fb::Graph> encode(const ir::Graph& g) {
    std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
    for (const ir::Tensor& t : g.tensors) tensors.push_back(encodeTensor(t));
    std::vector<flatbuffers::Offset<fb::Node>> nodes;
    for (const ir::Node& n : g.nodes) {
      auto sub = n.subgraph ? encode(*n.subgraph) : flatbuffers::Offset<fb::Graph>(0);
      std::vector<flatbuffers::Offset<fb::Graph>> branches;
      for (const auto& g_k : n.subgraphs) branches.push_back(encode(*g_k));
      auto subgraphs = branches.empty() ? 0 : fbb_.CreateVector(branches);
      auto attrs = encodeAttrs(fbb_, n.attrs);
      nodes.push_back(fb::CreateNode(fbb_, fbb_.CreateString(n.name), fbb_.CreateString(n.op->name),
                                     static_cast<fb::Attrs>(n.attrs.kind()), attrs, fbb_.CreateVector(n.inputs),
                                     fbb_.CreateVector(n.outputs), sub, subgraphs));
    }
    return fb::CreateGraph(fbb_, fbb_.CreateVector(tensors), fbb_.CreateVector(nodes), fbb_.CreateVector(g.inputs),
                           fbb_.CreateVector(g.outputs));
  }

  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Buffer>>> buffers() {
    return fbb_.CreateVector(buffers_);
  }

 private:
  flatbuffers::Offset<fb::Tensor> encodeTensor(const ir::Tensor& t) {
    int buffer = -1;
    if (t.constant) {
      auto it = buffer_index_.find(t.constant.get());
      if (it == buffer_index_.end()) {
        fbb_.ForceVectorAlignment(t.constant->size, 1, 64);
        auto data = fbb_.CreateVector(t.constant->data, t.constant->size);
        buffers_.push_back(fb::CreateBuffer(fbb_, data));
        it = buffer_index_.emplace(t.constant.get(), static_cast<int>(buffers_.size()) - 1).first;
      }
      buffer = it->second;
    }
    std::vector<flatbuffers::Offset<flatbuffers::String>> symbols;
    for (const std::string& s : t.dim_symbols) symbols.push_back(fbb_.CreateString(s));
    return fb::CreateTensor(fbb_, fbb_.CreateString(t.name), static_cast<fb::DType>(t.dtype),
                            fbb_.CreateVector(t.shape), symbols.empty() ? 0 : fbb_.CreateVector(symbols), buffer);
  }

  flatbuffers::FlatBufferBuilder& fbb_;
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers_;
  std::map<const ir::ConstData*, int> buffer_index_;
};

Status checkOps(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes) {
    if (!n.op) return makeError(StatusCode::kInvalidArgument, "cannot save a node without an op");
    if (n.subgraph) RETURN_IF_ERROR(checkOps(*n.subgraph));
    for (const auto& sub : n.subgraphs) RETURN_IF_ERROR(checkOps(*sub));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<uint8_t>> serializeModel(const ir::Graph& g) {
  RETURN_IF_ERROR(checkOps(g));
  flatbuffers::FlatBufferBuilder fbb(1 << 16);
  fbb.ForceDefaults(true);
  GraphEncoder enc(fbb);
  auto graph = enc.encode(g);
  auto buffers = enc.buffers();
  std::vector<flatbuffers::Offset<fb::MetadataEntry>> md;
  flatbuffers::Offset<flatbuffers::Vector<uint8_t>> gguf_metadata;
  for (const auto& [k, v] : g.metadata) {
    if (k == kGgufMetadataKey) {
      gguf_metadata = fbb.CreateVector(reinterpret_cast<const uint8_t*>(v.data()), v.size());
      continue;
    }
    md.push_back(fb::CreateMetadataEntry(fbb, fbb.CreateString(k), fbb.CreateString(v)));
  }
  auto model = fb::CreateModel(fbb, kSchemaVersion, graph, buffers, fbb.CreateVector(md), gguf_metadata);
  fb::FinishModelBuffer(fbb, model);
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

// Written to a temporary file beside `path` and renamed over it: a reader (another
// process converting the same model, a session loading it) sees the old file or the new
// one, never half of one, and a failed write (a full disk) leaves no truncated model.
Status saveModelFile(const ir::Graph& g, const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, serializeModel(g));
  static std::atomic<unsigned> counter{0};
  const std::string tmp = path + ".tmp" + std::to_string(static_cast<long>(::getpid())) + "_" +
                          std::to_string(counter.fetch_add(1));
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return makeError(StatusCode::kIoError, "cannot write '", path, "': ", std::strerror(errno));
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  std::string why = ok ? "" : std::strerror(errno);
  if (std::fclose(f) != 0 && why.empty()) why = std::strerror(errno);
  if (why.empty() && std::rename(tmp.c_str(), path.c_str()) != 0) why = std::strerror(errno);
  if (!why.empty()) {
    std::remove(tmp.c_str());
    return makeError(StatusCode::kIoError, "writing '", path, "' failed: ", why);
  }
  return Status::Ok();
}

}  // namespace gkrt
