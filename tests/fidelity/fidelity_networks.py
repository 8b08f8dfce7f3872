"""The networks the MindSpore fidelity test builds on both sides: the seeds' two, an
MLP, a LayerNorm block, softmax attention, a conv block, and random graphs of the ops
both have (elementwise and broadcast chains, reductions with keep_dims, reshape,
transpose, matmul), float32."""
import numpy as np

from fidelity_nets import Net


def weight(rng, shape, scale=0.3):
    return rng.uniform(-scale, scale, shape).astype(np.float32)


def seed_mynet(rng):  # seeds: MyNet, result = x * 2 + 1
    n = Net("seed_mynet")
    x = n.input("x", (4, 4))
    n.output(n.op("Add", n.op("Mul", x, 2.0), 1.0))
    return n


def seed_myop(rng):  # seeds: MyOp, (x*2)^3 - y, times (x*2)^3
    n = Net("seed_myop")
    x, y = n.input("x", (4, 4)), n.input("y", (4, 4))
    b = n.op("Pow", n.op("Mul", x, 2.0), 3.0)
    n.output(n.op("Mul", n.op("Sub", b, y), b))
    return n


def mlp(rng):  # x @ W1 + b1 -> GeLU -> @ W2 + b2 -> Softmax
    n = Net("mlp")
    x = n.input("x", (4, 16))
    h = n.op("Add", n.op("MatMul", x, n.const(weight(rng, (16, 32)))), n.const(weight(rng, (32,))))
    h = n.op("GeLU", h)
    y = n.op("Add", n.op("MatMul", h, n.const(weight(rng, (32, 10)))), n.const(weight(rng, (10,))))
    n.output(n.op("Softmax", y, axis=-1))
    return n


def layernorm_block(rng):  # LayerNorm(x + 0.5 r) * 2 - 1
    n = Net("layernorm_block")
    x, r = n.input("x", (2, 6, 16)), n.input("r", (2, 6, 16))
    s = n.op("Add", x, n.op("Mul", r, 0.5))
    y = n.op("LayerNorm", s, n.const(1 + weight(rng, (16,))), n.const(weight(rng, (16,))), axis=2, eps=1e-5)
    n.output(n.op("Sub", n.op("Mul", y, 2.0), 1.0))
    return n


def attention(rng):  # softmax(Q K^T / 4 + mask) V
    n = Net("attention")
    q, k, v = (n.input(name, (2, 8, 16)) for name in ("q", "k", "v"))
    s = n.op("BatchMatMul", q, k, transpose_b=True)
    s = n.op("Add", n.op("Mul", s, 0.25), n.const(weight(rng, (8, 8), 1.0)))
    n.output(n.op("BatchMatMul", n.op("Softmax", s, axis=-1), v))
    return n


def conv_block(rng):  # ReLU(BiasAdd(Conv3x3(x)) + Conv1x1(x))
    n = Net("conv_block")
    x = n.input("x", (1, 4, 10, 10))
    y = n.op("BiasAdd", n.op("Conv2D", x, n.const(weight(rng, (8, 4, 3, 3))), pad=1), n.const(weight(rng, (8,))))
    y = n.op("ReLU", y)
    short = n.op("Conv2D", x, n.const(weight(rng, (8, 4, 1, 1))), pad=0)
    n.output(n.op("ReLU", n.op("Add", y, short)))
    return n


NAMED = [seed_mynet, seed_myop, mlp, layernorm_block, attention, conv_block]


def random_net(seed):
    """A random graph of elementwise/broadcast/reduce/reshape/transpose/matmul ops."""
    rng = np.random.default_rng(seed)
    n = Net("random_%d" % seed)
    dims = [1, 2, 3, 4, 5, 7, 8, 16]
    rank = int(rng.integers(1, 4))
    shape = tuple(int(rng.choice(dims)) for _ in range(rank))
    pool = [n.input("x", shape)]
    if rng.random() < 0.5:
        bshape = tuple(1 if rng.random() < 0.4 else d for d in shape)
        pool.append(n.input("y", bshape))
    for _ in range(int(rng.integers(2, 9))):
        x = pool[-1] if rng.random() < 0.6 else pool[int(rng.integers(len(pool)))]
        s = n.shapes[x]
        kind = rng.random()
        if kind < 0.3:
            op = str(rng.choice(["Exp", "Log", "Sqrt", "Neg", "Abs", "Tanh", "ReLU", "Sigmoid"]))
            if op in ("Log", "Sqrt"):
                x = n.op("Add", n.op("Abs", x), 0.5)
            elif op == "Exp":
                x = n.op("Minimum", x, 4.0)
            pool.append(n.op(op, x))
        elif kind < 0.65:
            op = str(rng.choice(["Add", "Sub", "Mul", "RealDiv", "Maximum", "Minimum"]))
            r = rng.random()
            if r < 0.3:
                y = float(np.float32(rng.uniform(0.5, 2)))
            else:
                ys = tuple(1 if rng.random() < 0.4 else d for d in s)
                y = n.const(weight(rng, ys, 1.0)) if r < 0.7 else pool[0] if n.shapes[pool[0]] == s else \
                    n.const(weight(rng, s, 1.0))
            if op == "RealDiv" and isinstance(y, str):  # a divisor away from 0
                if y in n.consts:  # a constant made so (MindSpore keeps |c| + 0.5 as ops on a Parameter)
                    n.consts[y] = (np.abs(n.consts[y]) + np.float32(0.5)).astype(np.float32)
                else:
                    y = n.op("Add", n.op("Abs", y), 0.5)
            pool.append(n.op(op, x, y))
        elif kind < 0.8 and len(s) > 0:
            op = str(rng.choice(["ReduceSum", "ReduceMax", "ReduceMean"]))
            axes = [d for d in range(len(s)) if rng.random() < 0.5] or [int(rng.integers(len(s)))]
            pool.append(n.op(op, x, axes=axes, keep_dims=bool(rng.random() < 0.5)))
        elif kind < 0.88 and len(s) > 1:
            perm = [int(p) for p in rng.permutation(len(s))]
            pool.append(n.op("Transpose", x, perm=perm))
        elif kind < 0.94 and len(s) > 0:
            size = int(np.prod(s))
            new = [size] if rng.random() < 0.5 or size == 1 else [s[0], size // s[0]]
            pool.append(n.op("Reshape", x, shape=new))
        elif len(s) == 2:
            pool.append(n.op("MatMul", x, n.const(weight(rng, (s[1], int(rng.choice(dims)))))))
    outs = [pool[-1]] + [v for v in pool[1:-1] if v.startswith("v") and rng.random() < 0.2]
    for o in dict.fromkeys(outs):
        if o.startswith("v"):
            n.output(o)
    if not n.outputs:
        n.output(n.op("Neg", pool[-1]))
    return n
