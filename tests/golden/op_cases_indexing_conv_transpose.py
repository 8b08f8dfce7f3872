"""Golden cases for GatherElements, GatherND, ScatterElements, ScatterND, TopK and
ConvTranspose; make_op_cases.py calls add_cases(case, rng). Expected values come from
numpy (float64 loops for ConvTranspose), not from gkrt."""
import numpy as np


def conv_transpose_ref(x, w, b, strides, pads, dilations, out_pad, groups):
    """ONNX ConvTranspose by scattering: out[i*s + k*d - pad] += x[i] * w[k]."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n, c = x.shape[:2]
    sp = x.ndim - 2
    mg = w.shape[1]
    m = mg * groups
    cg = c // groups
    out_sp = [strides[d] * (x.shape[2 + d] - 1) + out_pad[d] + dilations[d] * (w.shape[2 + d] - 1) + 1
              - pads[d] - pads[d + sp] for d in range(sp)]
    y = np.zeros([n, m] + out_sp)
    for ni in range(n):
        for ic in range(c):
            g = ic // cg
            for i in np.ndindex(*x.shape[2:]):
                for k in np.ndindex(*w.shape[2:]):
                    o = tuple(i[d] * strides[d] + k[d] * dilations[d] - pads[d] for d in range(sp))
                    if all(0 <= o[d] < out_sp[d] for d in range(sp)):
                        y[(ni, slice(g * mg, (g + 1) * mg)) + o] += x[(ni, ic) + i] * w[(ic, slice(None)) + k]
    if b is not None:
        y += b.reshape([1, m] + [1] * sp)
    return y.astype(np.float32)


def ints(v):
    return ",".join(str(int(x)) for x in v)


def add_cases(case, rng):
    data = rng.uniform(-2, 2, (3, 4, 5)).astype(np.float32)
    ind = rng.integers(-4, 4, (3, 2, 5)).astype(np.int64)
    case("GatherElements_axis1", "GatherElements", [data, ind],
         [np.take_along_axis(data, np.where(ind < 0, ind + 4, ind), axis=1)], {"axis": 1})
    ind_i32 = rng.integers(0, 3, (2, 4, 5)).astype(np.int32)
    case("GatherElements_axis0_int32", "GatherElements", [data, ind_i32],
         [np.take_along_axis(data, ind_i32.astype(np.int64), axis=0)], {"axis": 0})

    nd_ind = np.array([[[1, 2]], [[0, -1]], [[3, 0]]], np.int64)  # batch_dims=1: data[b, i, j, :]
    want = np.stack([data[b][tuple(np.where(t < 0, t + np.array([4, 5]), t))] for b, t in
                     enumerate(nd_ind[:, 0, :])])[:, None]
    case("GatherND_batch_dims1", "GatherND", [data, nd_ind], [want], {"batch_dims": 1})
    nd2 = np.array([[0, 1], [2, 3]], np.int64)
    case("GatherND_slices", "GatherND", [data, nd2], [np.stack([data[0, 1], data[2, 3]])])

    upd = rng.uniform(-2, 2, ind.shape).astype(np.float32)
    for red, fn in [("none", None), ("add", np.add), ("mul", np.multiply), ("max", np.maximum), ("min", np.minimum)]:
        if red == "none":  # unique targets: per (i, k) the indices along axis 1 differ
            uind = np.stack([rng.permutation(4)[:2] for _ in range(15)]).reshape(3, 5, 2).transpose(0, 2, 1).copy()
            out = data.copy()
            np.put_along_axis(out, uind, upd, axis=1)
            case("ScatterElements_none", "ScatterElements", [data, uind.astype(np.int64), upd], [out], {"axis": 1})
            continue
        out = data.astype(np.float64)
        norm = np.where(ind < 0, ind + 4, ind)
        for i, j, k in np.ndindex(*ind.shape):
            out[i, norm[i, j, k], k] = fn(out[i, norm[i, j, k], k], upd[i, j, k])
        case(f"ScatterElements_{red}", "ScatterElements", [data, ind, upd], [out.astype(np.float32)],
             {"axis": 1, "reduction": red})
    ints_data = rng.integers(-9, 9, (6,)).astype(np.int32)
    case("ScatterElements_add_int32", "ScatterElements",
         [ints_data, np.array([1, 1, 5], np.int64), np.array([3, 4, -2], np.int32)],
         [ints_data + np.array([0, 7, 0, 0, 0, -2], np.int32)], {"axis": 0, "reduction": "add"})

    sind = np.array([[1, 0], [2, 3], [1, 0]], np.int64)
    supd = rng.uniform(-2, 2, (3, 5)).astype(np.float32)
    out = data.astype(np.float64)
    for t in range(3):
        out[tuple(sind[t])] *= supd[t]
    case("ScatterND_mul", "ScatterND", [data, sind, supd], [out.astype(np.float32)], {"reduction": "mul"})
    out = data.copy()
    out[2] = 7.0
    case("ScatterND_none_slab", "ScatterND", [data, np.array([[2]], np.int64), np.full((1, 4, 5), 7.0, np.float32)],
         [out])

    tk = rng.uniform(-2, 2, (3, 6, 4)).astype(np.float32)
    tk[0, 1, 0] = tk[0, 4, 0]  # a tie: the lower index first
    order = np.argsort(-tk, axis=1, kind="stable")[:, :3]
    case("TopK_largest_axis1", "TopK", [tk], [np.take_along_axis(tk, order, 1), order.astype(np.int64)],
         {"k": 3, "axis": 1})
    ti = rng.integers(-50, 50, (4, 7)).astype(np.int64)
    order = np.argsort(ti, axis=-1, kind="stable")[:, :2]
    case("TopK_smallest_int64", "TopK", [ti], [np.take_along_axis(ti, order, -1), order.astype(np.int64)],
         {"k": 2, "axis": -1, "largest": "false"})

    x = rng.uniform(-1, 1, (2, 4, 5, 4)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 3, 3, 2)).astype(np.float32)
    b = rng.uniform(-1, 1, (6,)).astype(np.float32)
    attrs = dict(strides=[2, 1], pads=[1, 0, 0, 1], dilations=[1, 2], out_pad=[1, 0], groups=2)
    case("ConvTranspose_2d_grouped_strided_dilated", "ConvTranspose", [x, w, b],
         [conv_transpose_ref(x, w, b, **attrs)],
         {"strides": ints(attrs["strides"]), "pads": ints(attrs["pads"]), "dilations": ints(attrs["dilations"]),
          "output_padding": ints(attrs["out_pad"]), "groups": 2}, rtol=1e-4, atol=1e-5)
    x1 = rng.uniform(-1, 1, (1, 2, 6)).astype(np.float32)
    w1 = rng.uniform(-1, 1, (2, 3, 3)).astype(np.float32)
    case("ConvTranspose_1d_no_bias", "ConvTranspose", [x1, w1, None],
         [conv_transpose_ref(x1, w1, None, [3], [0, 0], [1], [0], 1)],
         {"strides": "3", "pads": "0,0", "dilations": "1", "output_padding": "0"}, rtol=1e-4, atol=1e-5)
    x3 = rng.uniform(-1, 1, (1, 2, 3, 2, 3)).astype(np.float32)
    w3 = rng.uniform(-1, 1, (2, 2, 2, 2, 2)).astype(np.float32)
    case("ConvTranspose_3d_negative_pad", "ConvTranspose", [x3, w3],
         [conv_transpose_ref(x3, w3, None, [2, 1, 2], [0, 0, 1, 0, -1, 0], [1, 1, 1], [0, 0, 0], 1)],
         {"strides": "2,1,2", "pads": "0,0,1,0,-1,0", "dilations": "1,1,1", "output_padding": "0,0,0"},
         rtol=1e-4, atol=1e-5)
