"""gkrt from Python: onnxruntime's interface over gkrt's runtime.

    import numpy as np, gkrt
    sess = gkrt.InferenceSession("model.onnx", backend="cpu", threads=2)
    (y,) = sess.run(None, {sess.get_inputs()[0].name: x})

Swapping from onnxruntime is one line: ``onnxruntime.InferenceSession(path)`` becomes
``gkrt.InferenceSession(path)``. Models are ``.gkm`` files or ONNX files (converted in
memory with ``gkrt convert``'s options). Errors raise ``gkrt.GkrtError`` (a
``RuntimeError``) with gkrt's message. docs/python.md has the whole interface.
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _gkrt
from ._gkrt import GkrtError

__version__: str = _gkrt.version()
__all__ = ["InferenceSession", "Generator", "NodeArg", "GkrtError", "convert", "available_backends", "get_available_providers",
           "__version__"]

try:  # bfloat16, float8, float4 and the 4-/2-bit ints as numpy dtypes, where installed
    import ml_dtypes as _ml
except ImportError:  # pragma: no cover - then they travel as float32 / int8 / uint8, as the CLI's .npy files
    _ml = None

# gkrt dtype -> onnxruntime's type string.
_ORT_TYPES = {
    "float32": "tensor(float)", "float16": "tensor(float16)", "float64": "tensor(double)", "bfloat16": "tensor(bfloat16)",
    "int8": "tensor(int8)", "int16": "tensor(int16)", "int32": "tensor(int32)", "int64": "tensor(int64)",
    "uint8": "tensor(uint8)", "uint16": "tensor(uint16)", "uint32": "tensor(uint32)", "uint64": "tensor(uint64)",
    "bool": "tensor(bool)", "float8e4m3fn": "tensor(float8e4m3fn)", "float8e4m3fnuz": "tensor(float8e4m3fnuz)",
    "float8e5m2": "tensor(float8e5m2)", "float8e5m2fnuz": "tensor(float8e5m2fnuz)", "float8e8m0": "tensor(float8e8m0)",
    "float4e2m1": "tensor(float4e2m1)", "int4": "tensor(int4)", "uint4": "tensor(uint4)", "int2": "tensor(int2)",
    "uint2": "tensor(uint2)",
}
# gkrt dtype -> ml_dtypes attribute. Float types travel as their bit patterns (gkrt holds
# them as ml_dtypes does); the sub-byte ints as int8/uint8 values (ml_dtypes masks them).
_ML_FLOATS = {"bfloat16": "bfloat16", "float8e4m3fn": "float8_e4m3fn", "float8e4m3fnuz": "float8_e4m3fnuz",
              "float8e5m2": "float8_e5m2", "float8e5m2fnuz": "float8_e5m2fnuz", "float8e8m0": "float8_e8m0fnu",
              "float4e2m1": "float4_e2m1fn"}
_ML_INTS = {"int4": "int4", "uint4": "uint4", "int2": "int2", "uint2": "uint2"}


def _ml_type(name: str):
    return getattr(_ml, name, None) if _ml is not None else None


def _ml_dtypes_by_numpy_dtype():
    found = {}
    for table in (_ML_FLOATS, _ML_INTS):
        for gk, ml in table.items():
            t = _ml_type(ml)
            if t is not None:
                found[np.dtype(t)] = gk
    return found


_FROM_ML = _ml_dtypes_by_numpy_dtype()


def _feed(name: str, value: Any):
    """(name, contiguous array, the gkrt dtype its bytes hold or "")."""
    a = np.ascontiguousarray(value)
    gk = _FROM_ML.get(a.dtype)
    if gk in _ML_FLOATS:
        return name, a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint8), gk
    if gk in _ML_INTS:
        return name, a.astype(np.int8 if gk.startswith("int") else np.uint8), gk
    if a.dtype.kind not in "fiub":
        raise GkrtError(f"input '{name}': numpy dtype {a.dtype} is not a gkrt dtype; gkrt takes float, int, uint and bool "
                        "arrays, and ml_dtypes' bfloat16, float8, float4, int4 and int2")
    return name, a, ""


def _result(array: np.ndarray, dtype: str) -> np.ndarray:
    if dtype in _ML_FLOATS and _ml is not None:
        return array.view(_ml_type(_ML_FLOATS[dtype]))
    if dtype in _ML_INTS and _ml is not None:
        return array.astype(_ml_type(_ML_INTS[dtype]))
    return array


def _path_or_bytes(model: Union[str, bytes, os.PathLike]):
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    return os.fspath(model)


class NodeArg:
    """An input or output as onnxruntime describes it: name, shape (ints, dim names or
    None where unknown) and type ("tensor(float)")."""

    def __init__(self, name: str, shape: List[Union[int, str, None]], dtype: str):
        self.name = name
        self.shape = shape
        self.dtype = dtype  # gkrt's name: "float32", "bfloat16", ...
        self.type = _ORT_TYPES.get(dtype, f"tensor({dtype})")

    def __repr__(self) -> str:
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


class InferenceSession:
    """A model compiled for one backend (reference, cpu, opencl, cuda).

    ``model``: a path to a .gkm or .onnx file, or its bytes. ``threads``: the cpu
    backend's threads (0 = every core). ``flags``: graph kernel fusion flags in
    MS_DEV_GRAPH_KERNEL_FLAGS syntax ("--opt_level=2 --disable_expand_ops=Gelu").
    ``precision``: f32, bf16 (cpu, cuda), tf32 or fp16 (cuda). ``input_shapes``: sizes for
    inputs with dynamic dims; with ``freeze`` (inputs fixed to values) and ``dims``
    (named dims fixed) they are also the ONNX converter's options, as in ``gkrt convert``.
    ``providers`` is accepted for onnxruntime scripts and ignored; pick with ``backend``.
    """

    def __init__(self, model: Union[str, bytes, os.PathLike], backend: str = "cpu", threads: int = 0,
                 flags: str = "", precision: str = "f32", input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
                 freeze: Optional[Mapping[str, Any]] = None, dims: Optional[Mapping[str, int]] = None,
                 device: str = "", max_memory: str = "", cache_dir: Optional[str] = None,
                 providers: Optional[Sequence[Any]] = None, sess_options: Any = None):
        shapes = {k: [int(d) for d in v] for k, v in (input_shapes or {}).items()}
        frozen = {k: np.ascontiguousarray(v) for k, v in (freeze or {}).items()}
        self._session = _gkrt.Session(_path_or_bytes(model), backend, int(threads), flags, precision, device,
                                      max_memory, shapes, frozen, {k: int(v) for k, v in (dims or {}).items()},
                                      cache_dir)
        self._inputs = [NodeArg(*i) for i in self._session.inputs()]
        self._outputs = [NodeArg(*o) for o in self._session.outputs()]

    def get_inputs(self) -> List[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        return list(self._outputs)

    def get_providers(self) -> List[str]:
        return [self._session.backend()]

    @property
    def backend(self) -> str:
        return self._session.backend()

    def kernel_count(self) -> int:
        """Kernels launched per run after fusion (of the current plan)."""
        return self._session.kernel_count()

    def run(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, Any],
            run_options: Any = None) -> List[np.ndarray]:
        """Runs once; returns the outputs named (all, in model order, for None)."""
        if not isinstance(input_feed, Mapping):
            raise GkrtError("run() takes the inputs as a dict {name: array}")
        feeds = [_feed(name, value) for name, value in input_feed.items()]
        names = list(output_names) if output_names else None
        return [_result(a, t) for a, t in self._session.run(feeds, names, _ml is not None)]


class Generator:
    """Text generation with a decoder LLM's KV cache (a .gkm or .onnx decoder with past
    key/value inputs: optimum's export, onnxruntime-genai's builder, opset 23's Attention).

    The cache holds ``max_context`` positions and is updated in place; ``append(ids)`` runs
    a prompt's prefill or more tokens, ``logits()`` is the last position's distribution,
    ``generate(prompt, ...)`` runs the whole loop (greedy when ``temperature`` is 0) and
    returns the new ids, handing each to ``on_token`` as it comes (return False to stop).
    ``dims`` fixes named dims of an ONNX file as ``gkrt convert --dim`` does.

        gen = gkrt.Generator("smollm2.gkm", threads=2)
        ids = gen.generate([504, 3575, 282, 4649, 314], max_new_tokens=8)
        gen.stats()["decode_tokens_per_second"]
    """

    def __init__(self, model: Union[str, os.PathLike], backend: str = "cpu", threads: int = 0, flags: str = "",
                 max_context: int = 2048, dims: Optional[Mapping[str, int]] = None):
        self._gen = _gkrt.Generator(os.fspath(model), backend, int(threads), flags, int(max_context),
                                    {k: int(v) for k, v in (dims or {}).items()})

    def append(self, ids: Sequence[int]) -> None:
        """Runs these tokens at the current position (errors past max_context)."""
        self._gen.append([int(i) for i in ids])

    def logits(self) -> np.ndarray:
        """The last appended position's logits, float32 [vocab] (a copy)."""
        return self._gen.logits()

    def sample(self, temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0,
               repetition_penalty: float = 1.0) -> int:
        """The next token from logits() (greedy at temperature 0)."""
        return self._gen.sample(float(temperature), int(top_k), float(top_p), float(repetition_penalty))

    def generate(self, prompt: Sequence[int], max_new_tokens: int = 32, temperature: float = 0.0, top_k: int = 0,
                 top_p: float = 1.0, repetition_penalty: float = 1.0, seed: int = 0, stop_ids: Sequence[int] = (),
                 on_token: Optional[Any] = None) -> List[int]:
        """Resets, runs the prompt, then up to max_new_tokens tokens; returns them."""
        return self._gen.generate([int(i) for i in prompt], int(max_new_tokens), float(temperature), int(top_k),
                                  float(top_p), float(repetition_penalty), int(seed), [int(i) for i in stop_ids],
                                  on_token)

    def reset(self) -> None:
        """Empties the cache: the next append() starts a new sequence."""
        self._gen.reset()

    def stats(self) -> dict:
        """The last generate(): token counts, seconds, prefill and decode tokens/s."""
        return dict(self._gen.stats())

    @property
    def position(self) -> int:
        return self._gen.position()

    @property
    def max_context(self) -> int:
        return self._gen.capacity()

    @property
    def vocab_size(self) -> int:
        return self._gen.vocab_size()

    def decode_kernel_count(self) -> int:
        """Kernels one decode step launches."""
        return self._gen.decode_kernel_count()


def convert(src: Union[str, os.PathLike], dst: Union[str, os.PathLike],
            input_shapes: Optional[Mapping[str, Sequence[int]]] = None, freeze: Optional[Mapping[str, Any]] = None,
            dims: Optional[Mapping[str, int]] = None) -> None:
    """Converts an ONNX file to .gkm (``gkrt convert SRC -o DST``)."""
    _gkrt.convert(os.fspath(src), os.fspath(dst), {k: [int(d) for d in v] for k, v in (input_shapes or {}).items()},
                  {k: np.ascontiguousarray(v) for k, v in (freeze or {}).items()},
                  {k: int(v) for k, v in (dims or {}).items()})


def available_backends() -> List[str]:
    """The backends this machine can run: reference and cpu, and opencl/cuda where a
    driver and device are present."""
    return _gkrt.available_backends()


def get_available_providers() -> List[str]:
    """onnxruntime's name for available_backends()."""
    return available_backends()
