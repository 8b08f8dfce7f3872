"""pytest set-up for the Python package's tests: the build's package (build/python,
which ./setup.sh puts on .venv's path) and the build's example and zoo models."""
import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("GKRT_BUILD_DIR", ROOT / "build"))
if str(BUILD / "python") not in sys.path:
    sys.path.insert(0, str(BUILD / "python"))


@pytest.fixture(scope="session")
def build_dir() -> pathlib.Path:
    return BUILD


@pytest.fixture(scope="session")
def examples(build_dir) -> pathlib.Path:
    ex = build_dir / "examples"
    if not (ex / "mynet.gkm").exists():
        pytest.fail(f"{ex}/mynet.gkm is missing: build first (./setup.sh)")
    return ex
