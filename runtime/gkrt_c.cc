#include "runtime/gkrt_c.h"

#include <cstring>
#include <map>
#include <string>

#include "runtime/generator.h"
#include "runtime/model_io.h"
#include "runtime/session.h"

struct gkrt_model {
  gkrt::ir::Graph graph;
};

struct gkrt_session {
  std::unique_ptr<gkrt::Session> session;
  std::map<std::string, gkrt::HostTensor> outputs;  // kept until the next run
};

struct gkrt_generator {
  std::unique_ptr<gkrt::Generator> generator;
};

#ifndef GKRT_VERSION
#error "GKRT_VERSION (the project version) is defined by cmake/gkrt_install.cmake"
#endif

namespace {

thread_local std::string g_last_error;

gkrt_status report(const gkrt::Status& s) {
  g_last_error = s.ok() ? "" : s.toString();
  return static_cast<gkrt_status>(s.code());
}

gkrt_status nullArg(const char* what) {
  return report(gkrt::makeError(gkrt::StatusCode::kInvalidArgument, what, " is NULL"));
}

}  // namespace

extern "C" {

const char* gkrt_last_error(void) { return g_last_error.c_str(); }

const char* gkrt_version(void) { return GKRT_VERSION; }

gkrt_status gkrt_model_load(const char* path, gkrt_model** out) {
  if (!path || !out) return nullArg("path or out");
  auto g = gkrt::loadModelFile(path);
  if (!g.ok()) return report(g.status());
  *out = new gkrt_model{std::move(g).value()};
  return GKRT_OK;
}

gkrt_status gkrt_model_load_buffer(const void* data, size_t size, gkrt_model** out) {
  if (!data || !out) return nullArg("data or out");
  auto g = gkrt::loadModelBuffer(data, size);
  if (!g.ok()) return report(g.status());
  *out = new gkrt_model{std::move(g).value()};
  return GKRT_OK;
}

void gkrt_model_free(gkrt_model* model) { delete model; }

gkrt_status gkrt_session_create(const gkrt_model* model, const char* backend, gkrt_session** out) {
  if (!model || !out) return nullArg("model or out");
  gkrt::SessionOptions opts;
  if (backend) opts.backend = backend;
  auto s = gkrt::Session::create(model->graph, opts);
  if (!s.ok()) return report(s.status());
  *out = new gkrt_session{std::move(s).value(), {}};
  return GKRT_OK;
}

void gkrt_session_free(gkrt_session* session) { delete session; }

size_t gkrt_session_input_count(const gkrt_session* s) { return s ? s->session->inputs().size() : 0; }
const char* gkrt_session_input_name(const gkrt_session* s, size_t i) {
  return s && i < s->session->inputs().size() ? s->session->inputs()[i].name.c_str() : nullptr;
}
gkrt_status gkrt_session_input_shape(const gkrt_session* s, size_t i, int64_t* dims, size_t capacity, size_t* rank) {
  if (!s || !dims || !rank) return nullArg("session, dims or rank");
  if (i >= s->session->inputs().size()) {
    return report(gkrt::makeError(gkrt::StatusCode::kInvalidArgument, "input index ", i, " is out of range; the model has ",
                                  s->session->inputs().size(), " inputs"));
  }
  const gkrt::Shape& shape = s->session->inputs()[i].shape;
  if (shape.size() > capacity) {
    return report(gkrt::makeError(gkrt::StatusCode::kInvalidArgument, "input ", i, " has rank ", shape.size(),
                                  ", more than the ", capacity, " dims given"));
  }
  for (size_t d = 0; d < shape.size(); ++d) dims[d] = shape[d];
  *rank = shape.size();
  return report(gkrt::Status::Ok());
}

size_t gkrt_session_output_count(const gkrt_session* s) { return s ? s->session->outputs().size() : 0; }
const char* gkrt_session_output_name(const gkrt_session* s, size_t i) {
  return s && i < s->session->outputs().size() ? s->session->outputs()[i].name.c_str() : nullptr;
}

gkrt_status gkrt_session_resize_input(gkrt_session* s, const char* name, const int64_t* dims, size_t rank) {
  if (!s || !name || (!dims && rank)) return nullArg("session, name or dims");
  return report(s->session->resizeInput(name, gkrt::Shape(dims, dims + rank)));
}

gkrt_status gkrt_session_set_input(gkrt_session* s, const char* name, gkrt_dtype dtype, const int64_t* dims,
                                   size_t rank, const void* data, size_t bytes) {
  if (!s || !name || !data || (!dims && rank)) return nullArg("session, name, dims or data");
  if (static_cast<int>(dtype) < 0 || static_cast<int>(dtype) >= gkrt::kNumDTypes) {
    return report(gkrt::makeError(gkrt::StatusCode::kInvalidArgument, "dtype ", int(dtype), " is unknown"));
  }
  gkrt::Shape shape(dims, dims + rank);
  auto count = gkrt::checkedNumElements(shape);
  if (!count.ok()) return report(count.status());
  gkrt::HostTensor t(static_cast<gkrt::DType>(dtype), shape);
  if (bytes != t.bytes()) {
    return report(gkrt::makeError(gkrt::StatusCode::kInvalidArgument, "input '", name, "': ", bytes,
                                  " bytes given, shape and dtype need ", t.bytes()));
  }
  std::memcpy(t.data(), data, bytes);
  return report(s->session->setInput(name, t));
}

gkrt_status gkrt_session_run(gkrt_session* s) {
  if (!s) return nullArg("session");
  s->outputs.clear();
  return report(s->session->run());
}

gkrt_status gkrt_session_output(gkrt_session* s, const char* name, const void** data, size_t* bytes,
                                gkrt_dtype* dtype, const int64_t** dims, size_t* rank) {
  if (!s || !name || !data || !bytes) return nullArg("session, name, data or bytes");
  auto it = s->outputs.find(name);
  if (it == s->outputs.end()) {
    auto t = s->session->output(name);
    if (!t.ok()) return report(t.status());
    it = s->outputs.emplace(name, std::move(t).value()).first;
  }
  const gkrt::HostTensor& t = it->second;
  *data = t.data();
  *bytes = t.bytes();
  if (dtype) *dtype = static_cast<gkrt_dtype>(t.dtype());
  if (dims) *dims = t.shape().data();
  if (rank) *rank = t.shape().size();
  return report(gkrt::Status::Ok());
}

void gkrt_generate_options_init(gkrt_generate_options* o) {
  if (o) *o = gkrt_generate_options{32, 0.0f, 0, 1.0f, 1.0f, 0, nullptr, 0};
}

gkrt_status gkrt_generator_create(const gkrt_model* model, const char* backend, int32_t num_threads, int64_t max_context,
                                  gkrt_generator** out) {
  if (!model || !out) return nullArg("model or out");
  gkrt::GeneratorOptions opts;
  if (backend) opts.backend = backend;
  opts.backend_options.num_threads = num_threads;
  opts.max_context = max_context;
  auto g = gkrt::Generator::create(model->graph, opts);
  if (!g.ok()) return report(g.status());
  *out = new gkrt_generator{std::move(g).value()};
  return GKRT_OK;
}

void gkrt_generator_free(gkrt_generator* generator) { delete generator; }

gkrt_status gkrt_generator_reset(gkrt_generator* g) {
  if (!g) return nullArg("generator");
  g->generator->reset();
  return report(gkrt::Status::Ok());
}

gkrt_status gkrt_generator_append(gkrt_generator* g, const int64_t* ids, size_t count) {
  if (!g || !ids) return nullArg("generator or ids");
  return report(g->generator->append(ids, count));
}

gkrt_status gkrt_generator_logits(const gkrt_generator* g, const float** logits, size_t* vocab_size) {
  if (!g || !logits) return nullArg("generator or logits");
  if (g->generator->position() == 0) {
    return report(gkrt::makeError(gkrt::StatusCode::kInvalidArgument, "no logits yet: append tokens first"));
  }
  *logits = g->generator->logits();
  if (vocab_size) *vocab_size = static_cast<size_t>(g->generator->vocabSize());
  return report(gkrt::Status::Ok());
}

int64_t gkrt_generator_position(const gkrt_generator* g) { return g ? g->generator->position() : 0; }

gkrt_status gkrt_generate(gkrt_generator* g, const int64_t* prompt, size_t prompt_count, const gkrt_generate_options* options,
                          gkrt_token_callback on_token, void* user) {
  if (!g || !prompt) return nullArg("generator or prompt");
  gkrt_generate_options o;
  gkrt_generate_options_init(&o);
  if (options) o = *options;
  if (o.stop_count && !o.stop_ids) return nullArg("options->stop_ids");
  gkrt::GenerateOptions go;
  go.max_new_tokens = o.max_new_tokens;
  go.sampling = {o.temperature, o.top_k, o.top_p, o.repetition_penalty, o.seed};
  go.stop_ids.assign(o.stop_ids, o.stop_ids + o.stop_count);
  std::vector<int64_t> p(prompt, prompt + prompt_count);
  return report(g->generator->generate(p, go, [&](int64_t id) { return !on_token || on_token(id, user) != 0; }));
}

}  // extern "C"
