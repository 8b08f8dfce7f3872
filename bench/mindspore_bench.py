"""One MindSpore 2.10 timing for bench/run_benchmarks.py's `mindspore` section, in its own
process because graph kernel fusion is a context setting fixed at the first compile:

    .venv/bin/python bench/mindspore_bench.py {myop_16m|transformer_block} {on|off} THREADS ITERATIONS

prints one JSON object {"p50_ms", "min_ms", "compile_ms"}. The networks are the ones
run_benchmarks.py gives gkrt: the seeds' MyOp body on 16M floats, and the zoo's
transformer encoder block (tests/models/make_models.py: seq 128, d_model 256, 4 heads,
FFN 1024, post-LayerNorm; random weights of the same shapes)."""
import json
import sys
import time

import numpy as np


def main():
    name, fusion, threads, iterations = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    import mindspore as ms
    import mindspore.nn as nn
    import mindspore.ops.operations as P
    from mindspore import Tensor, context
    context.set_context(mode=context.GRAPH_MODE, device_target="CPU", enable_graph_kernel=fusion == "on")
    try:
        context.set_context(runtime_num_threads=threads)
    except (AttributeError, TypeError, ValueError):
        pass
    rng = np.random.default_rng(7)

    class MyOp(nn.Cell):  # the seeds' MyNet with MyOp: ((2x)^3 - y) * (2x)^3
        def __init__(self):
            super().__init__()
            self.mul, self.pow, self.sub, self.mul2 = P.Mul(), P.Pow(), P.Sub(), P.Mul()

        def construct(self, x, y):
            b = self.pow(self.mul(x, 2.0), 3.0)
            return self.mul2(self.sub(b, y), b)

    class Block(nn.Cell):  # the zoo's post-LayerNorm encoder block
        def __init__(self, seq=128, d=256, heads=4, ffn=1024):
            super().__init__()
            self.seq, self.d, self.heads, self.hd = seq, d, heads, d // heads

            def w(*shape):
                return Tensor((rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32))
            self.wq, self.wk, self.wv, self.wo = w(d, d), w(d, d), w(d, d), w(d, d)
            self.bq, self.bk, self.bv, self.bo = (Tensor(np.zeros(d, np.float32)) for _ in range(4))
            self.w1, self.b1, self.w2, self.b2 = w(d, ffn), Tensor(np.zeros(ffn, np.float32)), w(ffn, d), \
                Tensor(np.zeros(d, np.float32))
            self.g1, self.be1 = Tensor(np.ones(d, np.float32)), Tensor(np.zeros(d, np.float32))
            self.g2, self.be2 = Tensor(np.ones(d, np.float32)), Tensor(np.zeros(d, np.float32))
            self.mm, self.bmm, self.bmm_t = P.MatMul(), P.BatchMatMul(), P.BatchMatMul(transpose_b=True)
            self.reshape, self.transpose, self.softmax = P.Reshape(), P.Transpose(), P.Softmax(-1)
            self.ln1 = P.LayerNorm(begin_norm_axis=-1, begin_params_axis=-1, epsilon=1e-5)
            self.ln2 = P.LayerNorm(begin_norm_axis=-1, begin_params_axis=-1, epsilon=1e-5)
            self.gelu, self.mul = P.GeLU(), P.Mul()

        def heads_of(self, t):
            return self.transpose(self.reshape(t, (1, self.seq, self.heads, self.hd)), (0, 2, 1, 3))

        def construct(self, x):  # x: [seq, d_model] (the batch of 1 folded; CPU MatMul is 2-D)
            q = self.heads_of(self.mm(x, self.wq) + self.bq)
            k = self.heads_of(self.mm(x, self.wk) + self.bk)
            v = self.heads_of(self.mm(x, self.wv) + self.bv)
            attn = self.softmax(self.mul(self.bmm_t(q, k), 1.0 / np.sqrt(self.hd)))
            ctx = self.reshape(self.transpose(self.bmm(attn, v), (0, 2, 1, 3)), (self.seq, self.d))
            h = self.ln1(x + self.mm(ctx, self.wo) + self.bo, self.g1, self.be1)[0]
            f = self.mm(self.gelu(self.mm(h, self.w1) + self.b1), self.w2) + self.b2
            return self.ln2(h + f, self.g2, self.be2)[0]

    if name == "myop_16m":
        net, inputs = MyOp(), [Tensor(rng.uniform(-1, 1, 16 << 20).astype(np.float32)) for _ in range(2)]
    else:
        net, inputs = Block(), [Tensor(rng.standard_normal((128, 256)).astype(np.float32))]
    t0 = time.perf_counter()
    net(*inputs).asnumpy()  # compile (AKG kernels too with fusion on) and the first run
    compile_ms = (time.perf_counter() - t0) * 1e3
    for _ in range(3):
        net(*inputs).asnumpy()
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        net(*inputs).asnumpy()  # waits for the run (includes copying the output out: 64 MiB for MyOp)
        times.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps({"p50_ms": float(np.median(times)), "min_ms": float(np.min(times)), "compile_ms": compile_ms}))


if __name__ == "__main__":
    main()
