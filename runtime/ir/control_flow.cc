#include "runtime/ir/control_flow.h"

#include <cstring>
#include <limits>

#include "runtime/ir/op_def.h"

namespace gkrt::ir {
namespace {

size_t bytesOf(const Shape& s, DType t) { return static_cast<size_t>(numElements(s)) * dtypeSize(t); }
Shape dropAxis(Shape s, size_t axis) {
  s.erase(s.begin() + static_cast<std::ptrdiff_t>(axis));
  return s;
}
std::string nodeName(const Node& n) { return std::string(n.op->name) + " node '" + n.name + "'"; }

// Values a loop or scan carries from step to step: the body reads `current` and
// writes `next`, which swap after each step.
struct Carried {
  std::vector<uint8_t*> current, next;
  // Takes scratch slots from `slot` on and copies in[first, first + count) in.
  void start(ControlFlowScratch& scratch, size_t& slot, const std::vector<TensorView>& in, size_t first, size_t count) {
    current.resize(count);
    next.resize(count);
    for (size_t k = 0; k < count; ++k) {
      const size_t bytes = bytesOf(in[first + k].shape, in[first + k].dtype);
      current[k] = scratch.get(slot++, bytes);
      next[k] = scratch.get(slot++, bytes);
      if (bytes) std::memcpy(current[k], in[first + k].data, bytes);
    }
  }
  // The final values into out[0, count).
  void finish(const std::vector<MutableTensorView>& out) const {
    for (size_t k = 0; k < current.size(); ++k) {
      const size_t bytes = bytesOf(out[k].shape, out[k].dtype);
      if (bytes) std::memcpy(out[k].data, current[k], bytes);
    }
  }
};

Status runIf(const Node& n, const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out,
             const SubgraphRunner& run) {
  const bool cond = in[0].as<uint8_t>()[0] != 0;
  std::vector<TensorView> captured(in.begin() + 1, in.end());
  return run(cond ? 0 : 1, captured, out);
}

// Copies slice `index` along `axis` of `src` into `dst` (or back, when `scatter`).
void moveSlice(const uint8_t* src_base, uint8_t* dst_base, const Shape& full, DType t, size_t axis, int64_t index,
               bool scatter) {
  int64_t outer = 1, inner = static_cast<int64_t>(dtypeSize(t));
  for (size_t d = 0; d < axis; ++d) outer *= full[d];
  for (size_t d = axis + 1; d < full.size(); ++d) inner *= full[d];
  const int64_t len = full[axis];
  for (int64_t o = 0; o < outer; ++o) {
    const size_t whole = static_cast<size_t>((o * len + index) * inner), part = static_cast<size_t>(o * inner);
    if (scatter) std::memcpy(dst_base + whole, src_base + part, static_cast<size_t>(inner));
    else std::memcpy(dst_base + part, src_base + whole, static_cast<size_t>(inner));
  }
}

Status runLoop(const Node& n, const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out,
               const SubgraphRunner& run, ControlFlowScratch& scratch) {
  const LoopAttrs& a = n.attrs.get<LoopAttrs>();
  const size_t carried = static_cast<size_t>(a.num_carried), scans = out.size() - carried;
  int64_t trips = a.trip_count >= 0 ? a.trip_count : std::numeric_limits<int64_t>::max();
  if (in[0].present()) trips = std::min(trips, in[0].as<int64_t>()[0]);
  bool cond = !in[1].present() || in[1].as<uint8_t>()[0] != 0;
  // Slots: 0 iteration, 1 cond in, 2 cond out, then carried values twice (current, next).
  auto* iteration = reinterpret_cast<int64_t*>(scratch.get(0, sizeof(int64_t)));
  uint8_t* cond_in = scratch.get(1, 1);
  uint8_t* cond_out = scratch.get(2, 1);
  size_t slot = 3;
  Carried values;
  values.start(scratch, slot, in, 2, carried);
  std::vector<TensorView> body_in(in.size());
  std::vector<MutableTensorView> body_out(1 + out.size());
  body_in[0] = {DType::kInt64, {}, iteration};
  body_in[1] = {DType::kBool, {}, cond_in};
  for (size_t k = 2 + carried; k < in.size(); ++k) body_in[k] = in[k];
  body_out[0] = {DType::kBool, {}, cond_out};
  int64_t i = 0;
  for (; i < trips && cond; ++i) {
    *iteration = i;
    *cond_in = cond ? 1 : 0;
    for (size_t k = 0; k < carried; ++k) {
      body_in[2 + k] = {in[2 + k].dtype, in[2 + k].shape, values.current[k]};
      body_out[1 + k] = {in[2 + k].dtype, in[2 + k].shape, values.next[k]};
    }
    for (size_t j = 0; j < scans; ++j) {
      const MutableTensorView& o = out[carried + j];
      const Shape row = dropAxis(o.shape, 0);
      if (i >= o.shape[0]) {
        return makeError(StatusCode::kInvalidArgument, nodeName(n), ": runs past its trip count ", o.shape[0],
                         ", for which its scan outputs are sized");
      }
      body_out[1 + carried + j] = {o.dtype, row, static_cast<uint8_t*>(o.data) + i * bytesOf(row, o.dtype)};
    }
    RETURN_IF_ERROR(run(0, body_in, body_out).withContext(nodeName(n) + " iteration " + std::to_string(i)));
    std::swap(values.current, values.next);
    cond = *cond_out != 0;
  }
  if (scans > 0 && i != a.trip_count) {
    return makeError(StatusCode::kInvalidArgument, nodeName(n), ": stopped after ", i, " iterations, but its scan "
                     "outputs are sized for the trip count ", a.trip_count, " given at conversion (a loop whose "
                     "condition ends it early cannot have scan outputs in gkrt)");
  }
  values.finish(out);
  return Status::Ok();
}

// One Scan over unbatched views.
Status scanOnce(const Node& n, const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out,
                const SubgraphRunner& run, ControlFlowScratch& scratch) {
  const ScanAttrs& a = n.attrs.get<ScanAttrs>();
  const size_t states = static_cast<size_t>(a.num_state), scanned = static_cast<size_t>(a.num_scan_inputs);
  const size_t scans = out.size() - states;
  auto axisOf = [](const Ints& axes, size_t k, size_t rank) {
    const int64_t ax = k < axes.size() ? axes[k] : 0;
    return static_cast<size_t>(ax < 0 ? ax + static_cast<int64_t>(rank) : ax);
  };
  auto reversed = [](const Ints& dirs, size_t k) { return k < dirs.size() && dirs[k] != 0; };
  const int64_t length = in[states].shape[axisOf(a.scan_input_axes, 0, in[states].shape.size())];
  size_t slot = 0;
  Carried state;
  state.start(scratch, slot, in, 0, states);
  std::vector<TensorView> body_in(in.begin(), in.end());
  std::vector<MutableTensorView> body_out(out.size());
  for (size_t j = 0; j < scanned; ++j) {
    const TensorView& x = in[states + j];
    const Shape slice = dropAxis(x.shape, axisOf(a.scan_input_axes, j, x.shape.size()));
    body_in[states + j] = {x.dtype, slice, scratch.get(slot++, bytesOf(slice, x.dtype))};
  }
  for (size_t j = 0; j < scans; ++j) {
    const MutableTensorView& y = out[states + j];
    const Shape slice = dropAxis(y.shape, axisOf(a.scan_output_axes, j, y.shape.size()));
    body_out[states + j] = {y.dtype, slice, scratch.get(slot++, bytesOf(slice, y.dtype))};
  }
  for (int64_t t = 0; t < length; ++t) {
    for (size_t j = 0; j < scanned; ++j) {
      const TensorView& x = in[states + j];
      const int64_t at = reversed(a.scan_input_directions, j) ? length - 1 - t : t;
      moveSlice(static_cast<const uint8_t*>(x.data), static_cast<uint8_t*>(const_cast<void*>(body_in[states + j].data)),
                x.shape, x.dtype, axisOf(a.scan_input_axes, j, x.shape.size()), at, false);
    }
    for (size_t k = 0; k < states; ++k) {
      body_in[k] = {in[k].dtype, in[k].shape, state.current[k]};
      body_out[k] = {in[k].dtype, in[k].shape, state.next[k]};
    }
    RETURN_IF_ERROR(run(0, body_in, body_out).withContext(nodeName(n) + " step " + std::to_string(t)));
    for (size_t j = 0; j < scans; ++j) {
      const MutableTensorView& y = out[states + j];
      const int64_t at = reversed(a.scan_output_directions, j) ? length - 1 - t : t;
      moveSlice(static_cast<const uint8_t*>(body_out[states + j].data), static_cast<uint8_t*>(y.data), y.shape, y.dtype,
                axisOf(a.scan_output_axes, j, y.shape.size()), at, true);
    }
    std::swap(state.current, state.next);
  }
  state.finish(out);
  return Status::Ok();
}

// Scan-8: every state, scanned input and output leads with a batch axis; each batch
// row is scanned on its own. Captured values are not batched.
Status scanBatched(const Node& n, const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out,
                   const SubgraphRunner& run, ControlFlowScratch& scratch) {
  const ScanAttrs& a = n.attrs.get<ScanAttrs>();
  const size_t batched_inputs = static_cast<size_t>(a.num_state + a.num_scan_inputs);
  const int64_t batch = out[0].shape[0];
  std::vector<TensorView> row_in(in);
  std::vector<MutableTensorView> row_out(out);
  for (int64_t b = 0; b < batch; ++b) {
    for (size_t k = 0; k < batched_inputs; ++k) {
      const Shape row = dropAxis(in[k].shape, 0);
      row_in[k] = {in[k].dtype, row, static_cast<const uint8_t*>(in[k].data) + b * bytesOf(row, in[k].dtype)};
    }
    for (size_t k = 0; k < out.size(); ++k) {
      const Shape row = dropAxis(out[k].shape, 0);
      row_out[k] = {out[k].dtype, row, static_cast<uint8_t*>(out[k].data) + b * bytesOf(row, out[k].dtype)};
    }
    RETURN_IF_ERROR(scanOnce(n, row_in, row_out, run, scratch).withContext("batch row " + std::to_string(b)));
  }
  return Status::Ok();
}

}  // namespace

Status runControlFlow(const Node& n, const std::vector<TensorView>& inputs,
                      const std::vector<MutableTensorView>& outputs, const SubgraphRunner& run,
                      ControlFlowScratch& scratch) {
  switch (n.attrs.kind()) {
    case AttrKind::kLoop: return runLoop(n, inputs, outputs, run, scratch);
    case AttrKind::kScan:
      return n.attrs.get<ScanAttrs>().batched ? scanBatched(n, inputs, outputs, run, scratch)
                                              : scanOnce(n, inputs, outputs, run, scratch);
    default: return runIf(n, inputs, outputs, run);
  }
}

}  // namespace gkrt::ir
