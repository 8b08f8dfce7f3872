// gkrt._gkrt.Generator: the runtime's KV-cache generator (runtime/generator.h) for
// Python; python/gkrt/__init__.py wraps it as gkrt.Generator.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "python/src/arrays.h"
#include "runtime/generator.h"
#include "tools/model_source.h"
#include "tools/parse_args.h"

namespace gkrt::python {
namespace {

SamplingOptions sampling(float temperature, int top_k, float top_p, float repetition_penalty, uint64_t seed) {
  const SamplingOptions s{temperature, top_k, top_p, repetition_penalty, seed};
  throwIfError(checkSampling(s));
  return s;
}

class PyGenerator {
 public:
  PyGenerator(const std::string& model, const std::string& backend, int threads, const std::string& flags, int64_t max_context,
              const std::map<std::string, int64_t>& dims) {
    if (threads < 0) throw GkrtError("threads must be >= 0 (0 = every core), got " + std::to_string(threads));
    tools::ImportOptions io;
    io.dim_values = dims;
    tools::SessionArgs args;
    args.backend = backend;
    args.flags = flags;
    const SessionOptions so = valueOr(args.toOptions());
    GeneratorOptions go;
    go.backend = so.backend;
    go.backend_options = so.backend_options;
    go.backend_options.num_threads = threads;
    go.fusion = so.fusion;
    go.max_memory_bytes = so.max_memory_bytes;
    go.max_context = max_context;
    nb::gil_scoped_release unlocked;  // loading and compiling take a while
    const ir::Graph g = valueOrLocked(tools::loadAnyModel(model, io));
    gen_ = valueOrLocked(Generator::create(g, go));
  }

  void append(const std::vector<int64_t>& ids) {
    if (ids.empty()) throw GkrtError("append() needs at least one token id");
    Status s = Status::Ok();
    {
      nb::gil_scoped_release unlocked;
      s = gen_->append(ids.data(), ids.size());
    }
    throwIfError(s);
  }

  nb::ndarray<nb::numpy, float> logits() const {  // a copy: the next append() overwrites the generator's
    auto* copy = new std::vector<float>(gen_->logits(), gen_->logits() + gen_->vocabSize());
    nb::capsule owner(copy, [](void* p) noexcept { delete static_cast<std::vector<float>*>(p); });
    return nb::ndarray<nb::numpy, float>(copy->data(), {size_t(gen_->vocabSize())}, owner);
  }

  int64_t sample(float temperature, int top_k, float top_p, float repetition_penalty) {
    return gen_->sample(sampling(temperature, top_k, top_p, repetition_penalty, 0));
  }

  // The ids generated; `on_token` (when given) sees each as it comes and may return
  // False to stop. Statistics of the run in stats().
  std::vector<int64_t> generate(const std::vector<int64_t>& prompt, int64_t max_new_tokens, float temperature, int top_k, float top_p,
                                float repetition_penalty, uint64_t seed, const std::vector<int64_t>& stop_ids,
                                std::optional<nb::callable> on_token) {
    if (prompt.empty()) throw GkrtError("generate() needs a prompt of at least one token id");
    if (max_new_tokens < 0) throw GkrtError("max_new_tokens must be 0 or more");
    GenerateOptions o;
    o.max_new_tokens = max_new_tokens;
    o.sampling = sampling(temperature, top_k, top_p, repetition_penalty, seed);
    o.stop_ids = stop_ids;
    std::vector<int64_t> out;
    std::optional<nb::python_error> raised;
    Status s = Status::Ok();
    {
      nb::gil_scoped_release unlocked;
      s = gen_->generate(prompt, o, [&](int64_t id) {
        out.push_back(id);
        if (!on_token) return true;
        nb::gil_scoped_acquire locked;
        try {
          nb::object r = (*on_token)(id);
          return r.is_none() || nb::cast<bool>(r);
        } catch (nb::python_error& e) {
          raised.emplace(std::move(e));
          return false;
        }
      }, &stats_);
    }
    if (raised) throw std::move(*raised);
    throwIfError(s);
    return out;
  }

  std::map<std::string, double> stats() const {
    auto rate = [](int64_t n, double secs) { return secs > 0 ? double(n) / secs : 0.0; };
    return {{"prompt_tokens", double(stats_.prompt_tokens)},
            {"generated_tokens", double(stats_.generated_tokens)},
            {"prefill_seconds", stats_.prefill_seconds},
            {"first_token_seconds", stats_.first_token_seconds},
            {"decode_seconds", stats_.decode_seconds},
            {"prefill_tokens_per_second", rate(stats_.prompt_tokens, stats_.prefill_seconds)},
            {"decode_tokens_per_second", rate(stats_.generated_tokens - 1, stats_.decode_seconds)}};
  }

  void reset() { gen_->reset(); }
  int64_t position() const { return gen_->position(); }
  int64_t capacity() const { return gen_->capacity(); }
  int64_t vocabSize() const { return gen_->vocabSize(); }
  size_t decodeKernelCount() const { return gen_->decodeKernelCount(); }

 private:
  template <class T> static T valueOrLocked(StatusOr<T> v) {
    if (!v.ok()) {
      nb::gil_scoped_acquire locked;
      throwIfError(v.status());
    }
    return std::move(v).value();
  }

  std::unique_ptr<Generator> gen_;
  GenerateStats stats_;
};

}  // namespace

void bindGenerator(nb::module_& m) {
  nb::class_<PyGenerator>(m, "Generator")
      .def(nb::init<const std::string&, const std::string&, int, const std::string&, int64_t, const std::map<std::string, int64_t>&>(),
           nb::arg("model"), nb::arg("backend"), nb::arg("threads"), nb::arg("flags"), nb::arg("max_context"), nb::arg("dims"))
      .def("append", &PyGenerator::append, nb::arg("ids"))
      .def("logits", &PyGenerator::logits)
      .def("sample", &PyGenerator::sample, nb::arg("temperature"), nb::arg("top_k"), nb::arg("top_p"), nb::arg("repetition_penalty"))
      .def("generate", &PyGenerator::generate, nb::arg("prompt"), nb::arg("max_new_tokens"), nb::arg("temperature"), nb::arg("top_k"),
           nb::arg("top_p"), nb::arg("repetition_penalty"), nb::arg("seed"), nb::arg("stop_ids"), nb::arg("on_token").none())
      .def("stats", &PyGenerator::stats)
      .def("reset", &PyGenerator::reset)
      .def("position", &PyGenerator::position)
      .def("capacity", &PyGenerator::capacity)
      .def("vocab_size", &PyGenerator::vocabSize)
      .def("decode_kernel_count", &PyGenerator::decodeKernelCount);
}

}  // namespace gkrt::python
