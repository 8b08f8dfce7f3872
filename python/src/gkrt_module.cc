// The Python extension module gkrt._gkrt: sessions, conversion and the backends' list.
// python/gkrt/__init__.py wraps it in onnxruntime's interface.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <mutex>
#include <set>

#include "backends/backend.h"
#include "python/src/arrays.h"
#include "runtime/gkrt_c.h"
#include "runtime/model_io.h"
#include "runtime/session.h"
#include "tools/model_source.h"
#include "tools/npy.h"
#include "tools/parse_args.h"

namespace gkrt::python {
namespace {

using Feed = std::tuple<std::string, InArray, std::string>;  // name, array, gkrt dtype its bytes are ("" = its own)

tools::ImportOptions importOptions(const std::map<std::string, std::vector<int64_t>>& input_shapes,
                                   const std::map<std::string, InArray>& freeze,
                                   const std::map<std::string, int64_t>& dims) {
  tools::ImportOptions o;
  for (const auto& [name, shape] : input_shapes) o.input_shapes[name] = Shape(shape.begin(), shape.end());
  for (const auto& [name, a] : freeze) o.frozen_inputs[name] = copyArray(a, arrayDType(a, "", "freeze '" + name + "'"));
  o.dim_values = dims;
  return o;
}

// A declared dim: its size, its symbol, or None.
nb::list declaredShape(const ir::Tensor& t) {
  nb::list dims;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (t.shape[d] >= 0) dims.append(t.shape[d]);
    else if (d < t.dim_symbols.size() && !t.dim_symbols[d].empty()) dims.append(t.dim_symbols[d]);
    else dims.append(nb::none());
  }
  return dims;
}

class PySession {
 public:
  PySession(nb::object model, const std::string& backend, int threads, const std::string& flags,
            const std::string& precision, const std::string& device, const std::string& max_memory,
            const std::map<std::string, std::vector<int64_t>>& input_shapes, const std::map<std::string, InArray>& freeze,
            const std::map<std::string, int64_t>& dims, std::optional<std::string> cache_dir) {
    const tools::ImportOptions io = importOptions(input_shapes, freeze, dims);
    if (nb::isinstance<nb::bytes>(model)) {
      nb::bytes b = nb::cast<nb::bytes>(model);
      model_ = valueOr(tools::loadAnyModelBytes(std::string(b.c_str(), b.size()), io));
    } else {
      model_ = valueOr(tools::loadAnyModel(nb::cast<std::string>(model), io));
    }
    tools::SessionArgs args;
    args.backend = backend;
    args.device = device;
    args.cache_dir = cache_dir;
    args.flags = flags;
    args.precision = precision;
    args.max_memory = max_memory;
    SessionOptions opts = valueOr(args.toOptions());
    if (threads < 0) throw GkrtError("threads must be >= 0 (0 = every core), got " + std::to_string(threads));
    opts.backend_options.num_threads = threads;
    for (const auto& [name, shape] : io.input_shapes) opts.input_shapes[name] = shape;
    nb::gil_scoped_release unlocked;  // compiling may take a while
    session_ = valueOr(Session::create(model_, opts));
  }

  nb::list inputs() const { return describe(model_.inputs); }
  nb::list outputs() const { return describe(model_.outputs); }
  std::string backend() const { return session_->backendName(); }
  size_t kernelCount() const { return session_->kernelCount(); }

  nb::list run(const std::vector<Feed>& feeds, std::optional<std::vector<std::string>> names, bool raw_narrow) {
    std::unique_lock<std::mutex> one_run_at_a_time(mutex_, std::defer_lock);
    {  // waited for without the GIL: the thread running now needs it to return
      nb::gil_scoped_release unlocked;
      one_run_at_a_time.lock();
    }
    std::vector<std::pair<std::string, HostTensor>> staged;
    std::set<std::string> fed;
    for (const auto& [name, array, as] : feeds) {
      const int t = model_.findTensor(name);
      if (t < 0 || std::find(model_.inputs.begin(), model_.inputs.end(), t) == model_.inputs.end()) {
        throw GkrtError("the model has no input '" + name + "'; inputs: " + names_of(model_.inputs));
      }
      if (!fed.insert(name).second) throw GkrtError("input '" + name + "' is given twice");
      const DType want = model_.tensors[t].dtype;
      HostTensor value;
      const DType have = arrayDType(array, as, "input '" + name + "'");
      if (have == want && sameAsCurrent(name, arrayShape(array))) {
        value = borrowArray(array, have);  // straight into the session's buffer
      } else {
        value = valueOr(npyToModelType(copyArray(array, have), want, name));
      }
      staged.emplace_back(name, std::move(value));
    }
    for (int t : model_.inputs) {
      const ir::Tensor& in = model_.tensors[t];
      if (!fed.count(in.name)) {
        throw GkrtError("input '" + in.name + "' (" + dtypeName(in.dtype) + " " + shapeToString(in.shape) + ") is not given");
      }
    }
    std::vector<std::string> wanted;
    if (names) {
      wanted = *names;
      for (const std::string& n : wanted) {
        const int t = model_.findTensor(n);
        if (t < 0 || std::find(model_.outputs.begin(), model_.outputs.end(), t) == model_.outputs.end()) {
          throw GkrtError("the model has no output '" + n + "'; outputs: " + names_of(model_.outputs));
        }
      }
    } else {
      for (int t : model_.outputs) wanted.push_back(model_.tensors[t].name);
    }
    std::vector<HostTensor> results;
    {
      nb::gil_scoped_release unlocked;
      Status s = Status::Ok();
      for (const auto& [name, value] : staged) {
        s = session_->setInput(name, value);
        if (!s.ok()) break;
      }
      if (s.ok()) s = session_->run();
      for (size_t i = 0; s.ok() && i < wanted.size(); ++i) {
        auto out = session_->output(wanted[i]);
        s = out.status();
        if (s.ok()) results.push_back(std::move(out).value());
      }
      if (!s.ok()) {
        nb::gil_scoped_acquire locked;
        throwIfError(s);
      }
    }
    nb::list out;
    for (HostTensor& r : results) {
      const std::string dtype = dtypeName(r.dtype());
      out.append(nb::make_tuple(toNumpy(std::move(r), raw_narrow), dtype));
    }
    return out;
  }

 private:
  nb::list describe(const std::vector<int>& ids) const {
    nb::list l;
    for (int t : ids) {
      const ir::Tensor& x = model_.tensors[t];
      l.append(nb::make_tuple(x.name, declaredShape(x), std::string(dtypeName(x.dtype))));
    }
    return l;
  }
  std::string names_of(const std::vector<int>& ids) const {
    std::string s;
    for (int t : ids) s += (s.empty() ? "" : ", ") + model_.tensors[t].name;
    return s;
  }
  // The session's current plan takes this size (a borrowed array is copied in at once).
  bool sameAsCurrent(const std::string& name, const Shape& shape) const {
    for (const TensorInfo& i : session_->inputs()) if (i.name == name) return i.shape == shape;
    return false;
  }

  ir::Graph model_;
  std::unique_ptr<Session> session_;
  std::mutex mutex_;
};

void convert(const std::string& src, const std::string& dst, const std::map<std::string, std::vector<int64_t>>& input_shapes,
             const std::map<std::string, InArray>& freeze, const std::map<std::string, int64_t>& dims) {
  const tools::ImportOptions io = importOptions(input_shapes, freeze, dims);
  nb::gil_scoped_release unlocked;
  Status s = Status::Ok();
  auto g = tools::importOnnx(src, io);
  s = g.ok() ? saveModelFile(*g, dst) : g.status();
  if (!s.ok()) {
    nb::gil_scoped_acquire locked;
    throwIfError(s);
  }
}

}  // namespace

void bindGenerator(nb::module_& m);  // python/src/generator.cc

}  // namespace gkrt::python

NB_MODULE(_gkrt, m) {
  namespace nb = nanobind;
  using namespace gkrt::python;
  nb::exception<GkrtError>(m, "GkrtError", PyExc_RuntimeError);
  m.def("version", []() { return std::string(gkrt_version()); });
  m.def("available_backends", []() { return gkrt::availableBackends(); });
  m.def("onnx_import_built_in", []() { return gkrt::tools::onnxImportBuiltIn(); });
  m.def("convert", &convert, nb::arg("src"), nb::arg("dst"), nb::arg("input_shapes"), nb::arg("freeze"), nb::arg("dims"));
  nb::class_<PySession>(m, "Session")
      .def(nb::init<nb::object, const std::string&, int, const std::string&, const std::string&, const std::string&,
                    const std::string&, const std::map<std::string, std::vector<int64_t>>&,
                    const std::map<std::string, InArray>&, const std::map<std::string, int64_t>&, std::optional<std::string>>(),
           nb::arg("model"), nb::arg("backend"), nb::arg("threads"), nb::arg("flags"), nb::arg("precision"),
           nb::arg("device"), nb::arg("max_memory"), nb::arg("input_shapes"), nb::arg("freeze"), nb::arg("dims"),
           nb::arg("cache_dir").none())
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("backend", &PySession::backend)
      .def("kernel_count", &PySession::kernelCount)
      .def("run", &PySession::run, nb::arg("feeds"), nb::arg("output_names").none(), nb::arg("raw_narrow"));
  bindGenerator(m);
}
