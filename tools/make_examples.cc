// Writes the bundled example models and their inputs (the seeds' two networks) into
// a directory. Run by the build; nothing it writes is committed.
//
//   make_examples OUT_DIR  ->  OUT_DIR/mynet.gkm, mynet_x.npy,
//                              OUT_DIR/mynet_myop.gkm, mynet_myop_x.npy, mynet_myop_y.npy
#include <iostream>

#include "runtime/builder.h"
#include "runtime/model_io.h"
#include "tools/npy.h"

namespace {

using namespace gkrt;

// MyNet: x * 2 + 1.
StatusOr<ir::Graph> myNet() {
  GraphBuilder b;
  b.setMetadata("description", "seeds MyNet: Mul(x, 2) then Add(., 1)");
  Value x = b.input("x", DType::kFloat32, {4, 4});
  b.output(b.add(b.mul(x, 2.0f), 1.0f), "result");
  return b.finish();
}

// MyNet with the custom MyOp: a = x*2; b = a^3; (b - y) * b.
StatusOr<ir::Graph> myNetMyOp() {
  GraphBuilder b;
  b.setMetadata("description", "seeds MyNet with MyOp: MyOp(Pow(Mul(x, 2), 3), y), MyOp(x, y) = (x - y) * x");
  Value x = b.input("x", DType::kFloat32, {4, 4});
  Value y = b.input("y", DType::kFloat32, {4, 4});
  Value cube = b.pow(b.mul(x, 2.0f), 3.0f);
  b.output(b.mul(b.sub(cube, y), cube), "result");
  return b.finish();
}

Status writeAll(const std::string& dir) {
  ASSIGN_OR_RETURN(ir::Graph net, myNet());
  RETURN_IF_ERROR(saveModelFile(net, dir + "/mynet.gkm"));
  RETURN_IF_ERROR(writeNpy(dir + "/mynet_x.npy", HostTensor::fromFloats({4, 4}, std::vector<float>(16, 0.5f))));
  ASSIGN_OR_RETURN(ir::Graph myop, myNetMyOp());
  RETURN_IF_ERROR(saveModelFile(myop, dir + "/mynet_myop.gkm"));
  RETURN_IF_ERROR(writeNpy(dir + "/mynet_myop_x.npy", HostTensor::fromFloats({4, 4}, std::vector<float>(16, 0.2f))));
  RETURN_IF_ERROR(writeNpy(dir + "/mynet_myop_y.npy", HostTensor::fromFloats({4, 4}, std::vector<float>(16, 0.3f))));
  return Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_examples OUT_DIR\n";
    return 2;
  }
  Status s = writeAll(argv[1]);
  if (!s.ok()) {
    std::cerr << "make_examples: " << s.toString() << "\n";
    return 1;
  }
  return 0;
}
