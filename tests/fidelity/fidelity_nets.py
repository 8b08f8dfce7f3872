"""Networks described once and built twice: as MindSpore source (a Cell written to a
file, since MindSpore's graph mode compiles a Cell from its source) and as an ONNX
model for `gkrt convert`. Only ops both sides have, spelled as MindSpore's primitives.

    net = Net("mynet")
    x = net.input("x", (4, 4))
    net.output(net.op("Add", net.op("Mul", x, 2.0), 1.0))
    net.mindspore_source()   # text of a module defining class Net(nn.Cell)
    net.onnx_model()         # onnx.ModelProto
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# MindSpore primitive -> ONNX op (attributes converted in Net._onnx_node)
ONNX_OP = {
    "Add": "Add", "Sub": "Sub", "Mul": "Mul", "RealDiv": "Div", "Pow": "Pow", "Maximum": "Max", "Minimum": "Min",
    "Exp": "Exp", "Log": "Log", "Sqrt": "Sqrt", "Neg": "Neg", "Abs": "Abs", "Tanh": "Tanh", "Sigmoid": "Sigmoid",
    "ReLU": "Relu", "GeLU": "Gelu", "Square": None, "ReduceSum": "ReduceSum", "ReduceMax": "ReduceMax",
    "ReduceMean": "ReduceMean", "Reshape": "Reshape", "Transpose": "Transpose", "MatMul": "MatMul",
    "BatchMatMul": "MatMul", "Softmax": "Softmax", "LayerNorm": "LayerNormalization", "Conv2D": "Conv",
    "BiasAdd": None, "Cast": "Cast",
}
UNARY = ["Exp", "Log", "Sqrt", "Neg", "Abs", "Tanh", "Sigmoid", "ReLU", "GeLU"]
BINARY = ["Add", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Pow"]


class Net:
    def __init__(self, name):
        self.name = name
        self.inputs = []      # (name, shape)
        self.consts = {}      # name -> np.ndarray (float32)
        self.nodes = []       # (out names, op, input names or floats, attrs)
        self.outputs = []
        self.shapes = {}
        self._n = 0

    def input(self, name, shape):
        self.inputs.append((name, tuple(shape)))
        self.shapes[name] = tuple(shape)
        return name

    def const(self, array):
        name = "c%d" % len(self.consts)
        self.consts[name] = np.asarray(array, dtype=np.float32)
        self.shapes[name] = self.consts[name].shape
        return name

    def op(self, op, *inputs, n_out=1, **attrs):
        outs = ["v%d" % (self._n + k) for k in range(n_out)]
        self._n += n_out
        self.nodes.append((outs, op, list(inputs), attrs))
        shapes = infer_shapes(self, op, list(inputs), attrs, n_out)
        for o, s in zip(outs, shapes):
            self.shapes[o] = s
        return outs[0] if n_out == 1 else outs

    def output(self, v):
        self.outputs.append(v)

    def random_inputs(self, rng):
        return {n: rng.uniform(-2, 2, s).astype(np.float32) for n, s in self.inputs}

    # --- MindSpore ------------------------------------------------------------------------
    def mindspore_source(self):
        lines = ["import mindspore.nn as nn", "import mindspore.ops.operations as P", "from mindspore import Tensor", "",
                 "class Net(nn.Cell):", "    def __init__(self, consts):", "        super().__init__()"]
        for name in self.consts:
            lines.append("        self.%s = Tensor(consts[%r])" % (name, name))
        body = []
        for k, (outs, op, ins, attrs) in enumerate(self.nodes):
            prim = "self.p%d" % k
            lines.append("        %s = %s" % (prim, ms_primitive(op, attrs, self.shapes, ins)))
            args = [a if isinstance(a, str) and a not in self.consts else
                    ("self." + a if isinstance(a, str) else repr(float(a))) for a in ins]
            args += ms_extra_args(op, attrs)
            target = ", ".join(outs) if len(outs) > 1 else outs[0]
            call = "%s(%s)" % (prim, ", ".join(args))
            if op == "LayerNorm" and len(outs) == 1:
                call += "[0]"
            body.append("        %s = %s" % (target, call))
        lines.append("")
        lines.append("    def construct(self, %s):" % ", ".join(n for n, _ in self.inputs))
        lines += body
        lines.append("        return %s" % ", ".join(self.outputs) + ("," if len(self.outputs) == 1 else ""))
        return "\n".join(lines) + "\n"

    # --- ONNX -----------------------------------------------------------------------------
    def onnx_model(self):
        nodes, inits = [], [numpy_helper.from_array(a, n) for n, a in self.consts.items()]
        extra = [0]

        def scalar(v):
            name = "s%d" % extra[0]
            extra[0] += 1
            inits.append(numpy_helper.from_array(np.array(v, dtype=np.float32), name))
            return name

        def ints(v):
            name = "i%d" % extra[0]
            extra[0] += 1
            inits.append(numpy_helper.from_array(np.array(v, dtype=np.int64), name))
            return name

        for outs, op, ins, attrs in self.nodes:
            names = [a if isinstance(a, str) else scalar(a) for a in ins]
            nodes += onnx_nodes(op, names, outs, attrs, ints, scalar, self.shapes)
        graph = helper.make_graph(
            nodes, self.name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in self.inputs],
            [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in self.outputs], inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


def ms_primitive(op, a, shapes, ins):
    if op in ("ReduceSum", "ReduceMax", "ReduceMean"):
        return "P.%s(keep_dims=%r)" % (op, a["keep_dims"])
    if op in ("MatMul", "BatchMatMul"):
        return "P.%s(transpose_a=False, transpose_b=%r)" % (op, a.get("transpose_b", False))
    if op == "Softmax":
        return "P.Softmax(axis=%d)" % a["axis"]
    if op == "LayerNorm":
        return "P.LayerNorm(begin_norm_axis=%d, begin_params_axis=%d, epsilon=%r)" % (a["axis"], a["axis"], a["eps"])
    if op == "Conv2D":
        w = shapes[ins[1]]
        return "P.Conv2D(out_channel=%d, kernel_size=(%d, %d), pad_mode='pad', pad=%d)" % (w[0], w[2], w[3], a["pad"])
    if op == "GeLU":
        return "P.GeLU()"
    return "P.%s()" % op


def ms_extra_args(op, a):
    if op in ("ReduceSum", "ReduceMax", "ReduceMean"):
        return [repr(tuple(a["axes"]))]
    if op == "Reshape":
        return [repr(tuple(a["shape"]))]
    if op == "Transpose":
        return [repr(tuple(a["perm"]))]
    return []


def onnx_nodes(op, ins, outs, a, ints, scalar, shapes):
    mk = helper.make_node
    if op == "Square":
        return [mk("Mul", [ins[0], ins[0]], outs)]
    if op == "BiasAdd":  # bias on axis 1
        rank = len(shapes[ins[0]])
        shape = ints([-1] + [1] * (rank - 2))
        tmp = outs[0] + "_b"
        return [mk("Reshape", [ins[1], shape], [tmp]), mk("Add", [ins[0], tmp], outs)]
    if op == "ReduceSum":
        return [mk("ReduceSum", [ins[0], ints(a["axes"])], outs, keepdims=int(a["keep_dims"]))]
    if op in ("ReduceMax", "ReduceMean"):
        return [mk(op, [ins[0], ints(a["axes"])], outs, keepdims=int(a["keep_dims"]))]
    if op == "Reshape":
        return [mk("Reshape", [ins[0], ints(a["shape"])], outs)]
    if op == "Transpose":
        return [mk("Transpose", ins, outs, perm=list(a["perm"]))]
    if op in ("MatMul", "BatchMatMul"):
        if a.get("transpose_b"):
            rank = len(shapes[ins[1]])
            perm = list(range(rank - 2)) + [rank - 1, rank - 2]
            t = outs[0] + "_t"
            return [mk("Transpose", [ins[1]], [t], perm=perm), mk("MatMul", [ins[0], t], outs)]
        return [mk("MatMul", ins, outs)]
    if op == "Softmax":
        return [mk("Softmax", ins, outs, axis=a["axis"])]
    if op == "LayerNorm":
        return [mk("LayerNormalization", ins, outs[:1], axis=a["axis"], epsilon=a["eps"])]
    if op == "Conv2D":
        p = a["pad"]
        return [mk("Conv", ins, outs, pads=[p, p, p, p])]
    if op == "GeLU":
        return [mk("Gelu", ins, outs, approximate="tanh")]
    return [mk(ONNX_OP[op], ins, outs)]


def infer_shapes(net, op, ins, a, n_out):
    s = [net.shapes[i] if isinstance(i, str) else () for i in ins]
    if op in BINARY:
        return [tuple(np.broadcast_shapes(s[0], s[1]))]
    if op in UNARY or op in ("Square", "Softmax", "BiasAdd", "Cast"):
        return [s[0]]
    if op in ("ReduceSum", "ReduceMax", "ReduceMean"):
        axes = [x % len(s[0]) for x in a["axes"]] if a["axes"] else list(range(len(s[0])))
        return [tuple(1 if d in axes else n for d, n in enumerate(s[0]) if a["keep_dims"] or d not in axes)]
    if op == "Reshape":
        return [tuple(a["shape"])]
    if op == "Transpose":
        return [tuple(s[0][p] for p in a["perm"])]
    if op in ("MatMul", "BatchMatMul"):
        n = s[1][-2] if a.get("transpose_b") else s[1][-1]
        batch = np.broadcast_shapes(s[0][:-2], s[1][:-2])
        return [tuple(batch) + (s[0][-2], n)]
    if op == "LayerNorm":
        stat = tuple(n if d < a["axis"] else 1 for d, n in enumerate(s[0]))
        return [s[0], stat, stat][:n_out]
    if op == "Conv2D":
        p, w = a["pad"], s[1]
        return [(s[0][0], w[0], s[0][2] + 2 * p - w[2] + 1, s[0][3] + 2 * p - w[3] + 1)]
    raise ValueError(op)


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


NUMPY_UNARY = {"Exp": np.exp, "Log": np.log, "Sqrt": np.sqrt, "Neg": np.negative, "Abs": np.abs, "Tanh": np.tanh,
               "Sigmoid": lambda x: 1 / (1 + np.exp(-x)), "ReLU": lambda x: np.maximum(x, 0), "GeLU": _gelu_tanh,
               "Square": np.square}
NUMPY_BINARY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "RealDiv": np.divide, "Maximum": np.maximum,
                "Minimum": np.minimum, "Pow": np.power}


def evaluate_float64(net, inputs):
    """The network in float64 numpy: a third opinion when MindSpore and gkrt differ
    (ops of the random graphs and the MLP; None for the others)."""
    env = {n: inputs[n].astype(np.float64) for n, _ in net.inputs}
    env.update({n: a.astype(np.float64) for n, a in net.consts.items()})
    for outs, op, ins, a in net.nodes:
        v = [env[i] if isinstance(i, str) else np.float64(i) for i in ins]
        if op in NUMPY_UNARY:
            r = NUMPY_UNARY[op](v[0])
        elif op in NUMPY_BINARY:
            r = NUMPY_BINARY[op](v[0], v[1])
        elif op in ("ReduceSum", "ReduceMax", "ReduceMean"):
            f = {"ReduceSum": np.sum, "ReduceMax": np.max, "ReduceMean": np.mean}[op]
            r = f(v[0], axis=tuple(a["axes"]) or None, keepdims=a["keep_dims"])
        elif op == "Reshape":
            r = v[0].reshape(a["shape"])
        elif op == "Transpose":
            r = v[0].transpose(a["perm"])
        elif op == "MatMul" and not a.get("transpose_b"):
            r = v[0] @ v[1]
        elif op == "Softmax":
            e = np.exp(v[0] - v[0].max(axis=a["axis"], keepdims=True))
            r = e / e.sum(axis=a["axis"], keepdims=True)
        else:
            return None
        env[outs[0]] = np.asarray(r)
    return [env[o] for o in net.outputs]
