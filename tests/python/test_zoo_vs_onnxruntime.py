"""One script, two engines: the same function runs the zoo's ONNX models with
onnxruntime and with gkrt (only the module differs) and the outputs agree."""
import pathlib

import numpy as np
import pytest

import gkrt

ort = pytest.importorskip("onnxruntime")

# Generated models (build/zoo) and real-weight ones (build/zoo_light), written by ctest's
# zoo tests, which ./setup.sh test runs first; each with its inputs as NAME_input_X.npy.
MODELS = ["zoo/mlp", "zoo/transformer_block", "zoo/minilm", "zoo/rnn_lstm", "zoo/rnn_bilstm", "zoo/rnn_gru",
          "zoo/cf_if_data", "zoo/cf_loop_accumulate", "zoo_light/squeezenet", "zoo_light/shufflenet"]


def run_model(engine, path: pathlib.Path, feeds):
    """What a user's script does; `engine` is onnxruntime or gkrt."""
    sess = engine.InferenceSession(str(path))
    names = [o.name for o in sess.get_outputs()]
    inputs = {i.name: feeds[i.name] for i in sess.get_inputs()}
    return names, sess.run(None, inputs)


def inputs_of(path: pathlib.Path):
    prefix = path.stem + "_input_"
    # an input named "gpu_0/data_0" is in the file "..._input_gpu_0%data_0.npy"
    return {f.stem[len(prefix):].replace("%", "/"): np.load(f) for f in path.parent.glob(prefix + "*.npy")}


@pytest.mark.parametrize("model", MODELS)
def test_same_outputs_as_onnxruntime(build_dir, model):
    path = build_dir / (model + ".onnx")
    if not path.exists():
        pytest.skip(f"{path} is written by ctest's zoo tests (./setup.sh test runs them first)")
    feeds = inputs_of(path)
    assert feeds, f"no inputs beside {path}"
    ort_names, ort_out = run_model(ort, path, feeds)
    gk_names, gk_out = run_model(gkrt, path, feeds)
    assert gk_names == ort_names
    for name, a, b in zip(ort_names, ort_out, gk_out):
        assert a.shape == b.shape and a.dtype == b.dtype, name
        np.testing.assert_allclose(b, a, rtol=1e-3, atol=1e-4, err_msg=f"{model}: output {name}")
