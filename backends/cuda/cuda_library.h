// The CUDA libraries gkrt opens only when a session needs them (cuBLASLt, cuDNN): dlopen
// by name, entry points resolved one by one, every missing one named in the error.
//
//   ASSIGN_OR_RETURN(void* lib, cuda::openLibrary({"libcudnn.so.9"}, "install cuDNN 9 ..."));
//   cuda::Symbols sym{lib};
//   sym(d->create, "cudnnCreate");
//   if (!sym.missing.empty()) return error naming sym.missing;
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>
#include <type_traits>

#include "runtime/ir/status.h"

namespace gkrt::cuda {

// The first of `names` that loads; else kUnsupported with dlopen's reason and `hint`.
inline StatusOr<void*> openLibrary(std::initializer_list<const char*> names, const std::string& hint) {
  std::string why = "not found";
  for (const char* name : names) {
    if (void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return lib;
    if (const char* e = dlerror()) why = e;
  }
  return makeError(StatusCode::kUnsupported, "cuda: cannot load ", *names.begin(), " (", why, "); ", hint);
}

struct Symbols {
  void* lib;
  std::string missing;  // comma-separated names not found
  template <class Fn> void operator()(Fn& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<Fn>>(dlsym(lib, name));
    if (!fn) missing += (missing.empty() ? "" : ", ") + std::string(name);
  }
};

}  // namespace gkrt::cuda
