"""The README's Python example, run as written (from the repository root)."""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_readme_python_example_runs_as_written(build_dir):
    (example,) = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    env = {"PYTHONPATH": str(build_dir / "python"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", example], cwd=ROOT, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("0.") and "'cpu'" in lines[0], lines
    assert lines[1] == "[('x', [4, 4], 'tensor(float)')]", lines
    assert lines[2:] == ["[[2. 2. 2. 2.]", " [2. 2. 2. 2.]", " [2. 2. 2. 2.]", " [2. 2. 2. 2.]]"], lines
