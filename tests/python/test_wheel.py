"""`pip wheel .` builds a wheel (scikit-build-core over this CMake project) that
installs into a new venv and runs MyNet there, away from the checkout.

After a host build the wheel links that build's libraries (GKRT_PYTHON_FROM_BUILD, docs/python.md)
instead of compiling them a second time (about 9 minutes of a cold CI run on 2 cores);
GKRT_WHEEL_FROM_SOURCE=1 builds it as a bare `pip wheel .` does, the library and all."""
import os
import pathlib
import subprocess
import sys
import venv
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def build_compilers(build_dir):
    """Options giving the wheel's build the compilers build/ used, by the same names:
    ccache keys on the compiler's name too (pip's environment names x86_64-linux-gnu-g++
    where CMake found c++), and only then does build-wheel/ take build/'s objects."""
    cache = build_dir / "CMakeCache.txt"
    opts = []
    if cache.exists():
        for line in cache.read_text().splitlines():
            for var in ("CMAKE_C_COMPILER", "CMAKE_CXX_COMPILER"):
                if line.startswith(var + ":FILEPATH="):
                    opts.append(f"--config-settings=cmake.define.{var}={line.split('=', 1)[1]}")  # pip 23.0: no -C
    return opts


def from_build(build_dir):
    """The option that builds only the module over build_dir's libraries, where that build exported them; set
    empty otherwise (build-wheel/'s CMake cache would keep an earlier run's value)."""
    if os.environ.get("GKRT_WHEEL_FROM_SOURCE") == "1" or not (build_dir / "cmake" / "gkrt-build-targets.cmake").exists():
        return ["--config-settings=cmake.define.GKRT_PYTHON_FROM_BUILD="]
    return [f"--config-settings=cmake.define.GKRT_PYTHON_FROM_BUILD={build_dir.resolve()}"]


def test_wheel_installs_into_a_fresh_venv_and_runs_mynet(tmp_path, examples, build_dir):
    pytest.importorskip("scikit_build_core")
    env = dict(os.environ, CCACHE_BASEDIR=str(ROOT))  # build-wheel/ shares build/'s compiler cache
    wheels = tmp_path / "wheels"
    # --no-build-isolation: the venv's scikit-build-core and nanobind (no download).
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-q",
                    "--disable-pip-version-check", "-w", str(wheels)] + build_compilers(build_dir) + from_build(build_dir),
                   check=True, env=env, cwd=tmp_path)
    (wheel,) = wheels.glob("gkrt-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for part in ("gkrt/__init__.py", "gkrt/_gkrt.pyi", "gkrt/py.typed"):  # stubs for editors ship with it
        assert part in names, names
    assert any(n.startswith("gkrt/_gkrt.") and n.endswith(".so") for n in names), names
    fresh = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(fresh)
    py = fresh / "bin" / "python"
    # numpy from this venv's own source (PyPI), as a user's pip install gets it
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)], check=True)
    script = (
        "import numpy as np, gkrt, os\n"
        "assert os.path.dirname(gkrt.__file__).startswith(os.environ['FRESH'])\n"
        f"sess = gkrt.InferenceSession({str(examples / 'mynet.gkm')!r})\n"
        "(result,) = sess.run(None, {'x': np.ones((4, 4), np.float32) * 0.5})\n"
        "print('result: {}'.format(result))\n")
    out = subprocess.run([str(py), "-c", script], check=True, capture_output=True, text=True, cwd=tmp_path,
                         env={"PATH": os.environ.get("PATH", ""), "FRESH": str(fresh)})
    assert out.stdout == "result: [[2. 2. 2. 2.]\n [2. 2. 2. 2.]\n [2. 2. 2. 2.]\n [2. 2. 2. 2.]]\n"
