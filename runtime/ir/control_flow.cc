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
size_t axisOf(const Ints& axes, size_t k, size_t rank) {
  const int64_t ax = k < axes.size() ? axes[k] : 0;
  return static_cast<size_t>(ax < 0 ? ax + static_cast<int64_t>(rank) : ax);
}
bool reversed(const Ints& dirs, size_t k) { return k < dirs.size() && dirs[k] != 0; }

uint8_t* newBuffer(ControlFlowFrame& f, size_t bytes) {
  f.buffers.emplace_back(std::max<size_t>(bytes, 1));  // moving the outer vector keeps these addresses
  return f.buffers.back().data();
}

// Buffers for `count` carried values shaped as views[first, first + count).
void addCarried(ControlFlowFrame& f, const std::vector<TensorView>& views, size_t first, size_t count) {
  for (size_t k = 0; k < count; ++k) {
    const size_t bytes = bytesOf(views[first + k].shape, views[first + k].dtype);
    f.current.push_back(newBuffer(f, bytes));
    f.next.push_back(newBuffer(f, bytes));
  }
}

// The carried values' starting values from in[first, first + count).
void startCarried(ControlFlowFrame& f, const std::vector<TensorView>& in, size_t first) {
  for (size_t k = 0; k < f.current.size(); ++k) {
    const size_t bytes = bytesOf(in[first + k].shape, in[first + k].dtype);
    if (bytes) std::memcpy(f.current[k], in[first + k].data, bytes);
  }
}

// The carried values' final values into out[0, count).
void finishCarried(const ControlFlowFrame& f, const std::vector<MutableTensorView>& out) {
  for (size_t k = 0; k < f.current.size(); ++k) {
    const size_t bytes = bytesOf(out[k].shape, out[k].dtype);
    if (bytes) std::memcpy(out[k].data, f.current[k], bytes);
  }
}

Status runIf(const Node& n, const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out,
             const SubgraphRunner& run, ControlFlowFrame& f) {
  const bool cond = in[0].as<uint8_t>()[0] != 0;
  if (unbuiltBranch(n) == (cond ? 0 : 1)) {
    return makeError(StatusCode::kInvalidArgument, nodeName(n), ": the condition is ", cond ? "true" : "false",
                     " and its ", cond ? "then" : "else", " branch was not built: it could not run at the input shapes "
                     "the model was converted with (gkrt convert printed why). Convert the model with --input-shape "
                     "sizes at which that branch runs, or with --freeze of the input the condition comes from");
  }
  for (size_t k = 0; k < f.body_in.size(); ++k) f.body_in[k].data = in[1 + k].data;
  return run(cond ? 0 : 1, f.body_in, out);
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
               const SubgraphRunner& run, ControlFlowFrame& f) {
  const LoopAttrs& a = n.attrs.get<LoopAttrs>();
  const size_t carried = static_cast<size_t>(a.num_carried), scans = out.size() - carried;
  int64_t trips = a.trip_count >= 0 ? a.trip_count : std::numeric_limits<int64_t>::max();
  if (in[0].present()) trips = std::min(trips, in[0].as<int64_t>()[0]);
  bool cond = !in[1].present() || in[1].as<uint8_t>()[0] != 0;
  startCarried(f, in, 2);
  for (size_t k = 2 + carried; k < in.size(); ++k) f.body_in[k].data = in[k].data;
  int64_t i = 0;
  for (; i < trips && cond; ++i) {
    *f.iteration = i;
    *f.cond_in = cond ? 1 : 0;
    for (size_t k = 0; k < carried; ++k) {
      f.body_in[2 + k].data = f.current[k];
      f.body_out[1 + k].data = f.next[k];
    }
    for (size_t j = 0; j < scans; ++j) {
      const MutableTensorView& o = out[carried + j];
      MutableTensorView& row = f.body_out[1 + carried + j];
      if (i >= o.shape[0]) {
        return makeError(StatusCode::kInvalidArgument, nodeName(n), ": runs past its trip count ", o.shape[0],
                         ", for which its scan outputs are sized");
      }
      row.data = static_cast<uint8_t*>(o.data) + i * static_cast<int64_t>(bytesOf(row.shape, row.dtype));
    }
    Status step = run(0, f.body_in, f.body_out);  // the context only on failure: runs allocate nothing
    if (!step.ok()) return step.withContext(nodeName(n) + " iteration " + std::to_string(i));
    std::swap(f.current, f.next);
    cond = *f.cond_out != 0;
  }
  if (scans > 0 && i != a.trip_count) {
    return makeError(StatusCode::kInvalidArgument, nodeName(n), ": stopped after ", i, " iterations, but its scan "
                     "outputs are sized for the trip count ", a.trip_count, " given at conversion (a loop whose "
                     "condition ends it early cannot have scan outputs in gkrt)");
  }
  finishCarried(f, out);
  return Status::Ok();
}

// One Scan over unbatched views.
Status scanOnce(const Node& n, const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out,
                const SubgraphRunner& run, ControlFlowFrame& f) {
  const ScanAttrs& a = n.attrs.get<ScanAttrs>();
  const size_t states = static_cast<size_t>(a.num_state), scanned = static_cast<size_t>(a.num_scan_inputs);
  const size_t scans = out.size() - states;
  const int64_t length = in[states].shape[axisOf(a.scan_input_axes, 0, in[states].shape.size())];
  startCarried(f, in, 0);
  for (size_t k = states + scanned; k < in.size(); ++k) f.body_in[k].data = in[k].data;
  for (int64_t t = 0; t < length; ++t) {
    for (size_t j = 0; j < scanned; ++j) {
      const TensorView& x = in[states + j];
      const int64_t at = reversed(a.scan_input_directions, j) ? length - 1 - t : t;
      moveSlice(static_cast<const uint8_t*>(x.data), static_cast<uint8_t*>(const_cast<void*>(f.body_in[states + j].data)),
                x.shape, x.dtype, axisOf(a.scan_input_axes, j, x.shape.size()), at, false);
    }
    for (size_t k = 0; k < states; ++k) {
      f.body_in[k].data = f.current[k];
      f.body_out[k].data = f.next[k];
    }
    Status step = run(0, f.body_in, f.body_out);
    if (!step.ok()) return step.withContext(nodeName(n) + " step " + std::to_string(t));
    for (size_t j = 0; j < scans; ++j) {
      const MutableTensorView& y = out[states + j];
      const int64_t at = reversed(a.scan_output_directions, j) ? length - 1 - t : t;
      moveSlice(static_cast<const uint8_t*>(f.body_out[states + j].data), static_cast<uint8_t*>(y.data), y.shape,
                y.dtype, axisOf(a.scan_output_axes, j, y.shape.size()), at, true);
    }
    std::swap(f.current, f.next);
  }
  finishCarried(f, out);
  return Status::Ok();
}

// Scan-8: every state, scanned input and output leads with a batch axis; each batch
// row is scanned on its own. Captured values are not batched.
Status scanBatched(const Node& n, const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out,
                   const SubgraphRunner& run, ControlFlowFrame& f) {
  const ScanAttrs& a = n.attrs.get<ScanAttrs>();
  const size_t batched_inputs = static_cast<size_t>(a.num_state + a.num_scan_inputs);
  const int64_t batch = out[0].shape[0];
  for (size_t k = batched_inputs; k < in.size(); ++k) f.row_in[k].data = in[k].data;
  for (int64_t b = 0; b < batch; ++b) {
    for (size_t k = 0; k < batched_inputs; ++k) {
      TensorView& row = f.row_in[k];
      row.data = static_cast<const uint8_t*>(in[k].data) + b * static_cast<int64_t>(bytesOf(row.shape, row.dtype));
    }
    for (size_t k = 0; k < out.size(); ++k) {
      MutableTensorView& row = f.row_out[k];
      row.data = static_cast<uint8_t*>(out[k].data) + b * static_cast<int64_t>(bytesOf(row.shape, row.dtype));
    }
    Status row = scanOnce(n, f.row_in, f.row_out, run, f);
    if (!row.ok()) return row.withContext("batch row " + std::to_string(b));
  }
  return Status::Ok();
}

void prepareLoop(const Node& n, const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out,
                 ControlFlowFrame& f) {
  const size_t carried = static_cast<size_t>(n.attrs.get<LoopAttrs>().num_carried);
  f.iteration = reinterpret_cast<int64_t*>(newBuffer(f, sizeof(int64_t)));
  f.cond_in = newBuffer(f, 1);
  f.cond_out = newBuffer(f, 1);
  addCarried(f, in, 2, carried);
  f.body_in = in;
  f.body_in[0] = {DType::kInt64, {}, f.iteration};
  f.body_in[1] = {DType::kBool, {}, f.cond_in};
  f.body_out.assign(1 + out.size(), {});
  f.body_out[0] = {DType::kBool, {}, f.cond_out};
  for (size_t k = 0; k < carried; ++k) f.body_out[1 + k] = {in[2 + k].dtype, in[2 + k].shape, nullptr};
  for (size_t k = carried; k < out.size(); ++k) f.body_out[1 + k] = {out[k].dtype, dropAxis(out[k].shape, 0), nullptr};
}

// `in`/`out`: the views one scan runs over (Scan-8: a batch row's).
void prepareScan(const Node& n, const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out,
                 ControlFlowFrame& f) {
  const ScanAttrs& a = n.attrs.get<ScanAttrs>();
  const size_t states = static_cast<size_t>(a.num_state), scanned = static_cast<size_t>(a.num_scan_inputs);
  addCarried(f, in, 0, states);
  f.body_in = in;
  f.body_out = out;
  for (size_t j = 0; j < scanned; ++j) {
    const TensorView& x = in[states + j];
    const Shape slice = dropAxis(x.shape, axisOf(a.scan_input_axes, j, x.shape.size()));
    f.body_in[states + j] = {x.dtype, slice, newBuffer(f, bytesOf(slice, x.dtype))};
  }
  for (size_t j = 0; j + states < out.size(); ++j) {
    const MutableTensorView& y = out[states + j];
    const Shape slice = dropAxis(y.shape, axisOf(a.scan_output_axes, j, y.shape.size()));
    f.body_out[states + j] = {y.dtype, slice, newBuffer(f, bytesOf(slice, y.dtype))};
  }
}

}  // namespace

int64_t unbuiltBranch(const Node& n) {
  return n.attrs.kind() == AttrKind::kIf ? n.attrs.get<IfAttrs>().unbuilt_branch : -1;
}

StatusOr<ControlFlowFrame> ControlFlowFrame::prepare(const Node& n, const std::vector<TensorView>& inputs,
                                                     const std::vector<MutableTensorView>& outputs) {
  ControlFlowFrame f;
  switch (n.attrs.kind()) {
    case AttrKind::kLoop:
      if (inputs.size() < 2 + static_cast<size_t>(n.attrs.get<LoopAttrs>().num_carried)) {
        return makeError(StatusCode::kInvalidModel, nodeName(n), ": fewer inputs than its carried values need");
      }
      prepareLoop(n, inputs, outputs, f);
      break;
    case AttrKind::kScan: {
      const ScanAttrs& a = n.attrs.get<ScanAttrs>();
      if (!a.batched) {
        prepareScan(n, inputs, outputs, f);
        break;
      }
      const size_t batched_inputs = static_cast<size_t>(a.num_state + a.num_scan_inputs);
      f.row_in = inputs;
      f.row_out = outputs;
      for (size_t k = 0; k < batched_inputs; ++k) f.row_in[k].shape = dropAxis(inputs[k].shape, 0);
      for (MutableTensorView& row : f.row_out) row.shape = dropAxis(row.shape, 0);
      prepareScan(n, f.row_in, f.row_out, f);
      break;
    }
    default:  // If: the branches take the captured values
      if (inputs.empty()) return makeError(StatusCode::kInvalidModel, nodeName(n), ": has no cond input");
      f.body_in.assign(inputs.begin() + 1, inputs.end());
  }
  return f;
}

size_t ControlFlowFrame::bufferBytes() const {
  size_t bytes = 0;
  for (const auto& b : buffers) bytes += b.size();
  return bytes;
}

Status runControlFlow(const Node& n, const std::vector<TensorView>& inputs,
                      const std::vector<MutableTensorView>& outputs, const SubgraphRunner& run,
                      ControlFlowFrame& frame) {
  switch (n.attrs.kind()) {
    case AttrKind::kLoop: return runLoop(n, inputs, outputs, run, frame);
    case AttrKind::kScan:
      return n.attrs.get<ScanAttrs>().batched ? scanBatched(n, inputs, outputs, run, frame)
                                              : scanOnce(n, inputs, outputs, run, frame);
    default: return runIf(n, inputs, outputs, run, frame);
  }
}

}  // namespace gkrt::ir
