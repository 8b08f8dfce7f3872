// The seeds' two sample networks through gkrt's C++ API, as an application links gkrt:
// build each with gkrt::GraphBuilder (or load a .gkm with gkrt::loadModelFile), compile
// a Session for the cpu backend, run, print the outputs the way the seeds print them.
//
//   mynet_cpp [MODELS_DIR]   with a directory: load mynet.gkm and mynet_myop.gkm from it
#include <gkrt/gkrt_c.h>
#include <gkrt/runtime/builder.h>
#include <gkrt/runtime/model_io.h>
#include <gkrt/runtime/session.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

// MyNet: x * 2 + 1.
gkrt::StatusOr<gkrt::ir::Graph> buildMyNet() {
  gkrt::GraphBuilder b;
  gkrt::Value x = b.input("x", gkrt::DType::kFloat32, {4, 4});
  b.output(b.add(b.mul(x, 2.0f), 1.0f), "result");
  return b.finish();
}

// MyNet with MyOp: a = x*2; b = a^3; MyOp(b, y) = (b - y) * b.
gkrt::StatusOr<gkrt::ir::Graph> buildMyNetMyOp() {
  gkrt::GraphBuilder b;
  gkrt::Value x = b.input("x", gkrt::DType::kFloat32, {4, 4});
  gkrt::Value y = b.input("y", gkrt::DType::kFloat32, {4, 4});
  gkrt::Value cube = b.pow(b.mul(x, 2.0f), 3.0f);
  b.output(b.mul(b.sub(cube, y), cube), "result");
  return b.finish();
}

// numpy's spelling of one float: up to 8 decimals, trailing zeros dropped.
std::string numpyFloat(float v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.8f", static_cast<double>(v));
  std::string s = text;
  return s.substr(0, s.find_last_not_of('0') + 1);
}

// A float32 tensor numpy-style, every number right-aligned to the widest.
std::string numpyText(const gkrt::HostTensor& t) {
  const std::vector<float> values = t.toFloats();
  const gkrt::Shape& shape = t.shape();
  size_t width = 0;
  for (float v : values) width = std::max(width, numpyFloat(v).size());
  std::ostringstream out;
  out << std::string(shape.size(), '[');
  for (size_t i = 0; i < values.size(); ++i) {
    size_t block = 1, rows_ended = 0;
    for (size_t d = shape.size(); d-- > 0;) {
      block *= static_cast<size_t>(shape[d]);
      if ((i + 1) % block == 0) ++rows_ended;
    }
    const std::string v = numpyFloat(values[i]);
    out << std::string(width - v.size(), ' ') << v << std::string(rows_ended, ']');
    if (i + 1 == values.size()) break;
    if (rows_ended == 0) out << ' ';
    else out << std::string(rows_ended, '\n') << std::string(shape.size() - rows_ended, ' ') << std::string(rows_ended, '[');
  }
  return out.str();
}

// Compiles `model` for the cpu backend, sets input i to values[i] everywhere, runs,
// prints every output.
gkrt::Status runAndPrint(const gkrt::ir::Graph& model, const std::vector<float>& values) {
  gkrt::SessionOptions options;
  options.backend = "cpu";
  ASSIGN_OR_RETURN(std::unique_ptr<gkrt::Session> session, gkrt::Session::create(model, options));
  for (size_t i = 0; i < session->inputs().size() && i < values.size(); ++i) {
    const gkrt::TensorInfo& input = session->inputs()[i];
    std::vector<float> data(static_cast<size_t>(gkrt::numElements(input.shape)), values[i]);
    RETURN_IF_ERROR(session->setInput(input.name, gkrt::HostTensor::fromFloats(input.shape, data)));
  }
  RETURN_IF_ERROR(session->run());
  for (const gkrt::TensorInfo& output : session->outputs()) {
    ASSIGN_OR_RETURN(gkrt::HostTensor value, session->output(output.name));
    std::cout << output.name << ": " << numpyText(value) << "\n";
  }
  return gkrt::Status::Ok();
}

gkrt::Status runSeeds(const char* models_dir) {
  gkrt::StatusOr<gkrt::ir::Graph> mynet = models_dir ? gkrt::loadModelFile(std::string(models_dir) + "/mynet.gkm") : buildMyNet();
  RETURN_IF_ERROR(mynet.status());
  RETURN_IF_ERROR(runAndPrint(*mynet, {0.5f}));  // the seeds: x = ones(4, 4) * 0.5
  gkrt::StatusOr<gkrt::ir::Graph> myop =
      models_dir ? gkrt::loadModelFile(std::string(models_dir) + "/mynet_myop.gkm") : buildMyNetMyOp();
  RETURN_IF_ERROR(myop.status());
  return runAndPrint(*myop, {0.2f, 0.3f});  // x = ones * 0.2, y = ones * 0.3
}

}  // namespace

int main(int argc, char** argv) {
  const char* models_dir = argc > 1 ? argv[1] : nullptr;
  std::cout << "gkrt " << gkrt_version() << ", C++ API, models " << (models_dir ? "from " : "built with GraphBuilder")
            << (models_dir ? models_dir : "") << "\n";
  gkrt::Status status = runSeeds(models_dir);
  if (!status.ok()) {
    std::cerr << "mynet_cpp: " << status.toString() << "\n";
    return 1;
  }
  return 0;
}
