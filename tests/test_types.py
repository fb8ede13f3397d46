"""mypy's settings catch Any crossing the borders of the modules kept strict.

`make lint` runs mypy on the tree; this shows, on a copy, that a dict[str, Any]
added to one of those modules (fslab.base.vocab) fails it, and passes elsewhere.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MYPY = Path(sys.executable).with_name("mypy")
LEAK = "\n\ndef leak() -> dict[str, Any]:\n    return {}\n"


def _mypy_on_copy(tmp_path: Path, module: str) -> subprocess.CompletedProcess[str]:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(ROOT / "src" / "fslab", tmp_path / "src" / "fslab")
    path = tmp_path / "src" / "fslab" / module
    text = path.read_text().replace(
        "from __future__ import annotations\n",
        "from __future__ import annotations\n\nfrom typing import Any\n",
        1,
    )
    path.write_text(text + LEAK)
    return subprocess.run(
        [str(MYPY), "--cache-dir", str(tmp_path / "cache")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_any_in_a_strict_module_fails(tmp_path):
    result = _mypy_on_copy(tmp_path, "base/vocab.py")
    assert result.returncode != 0
    assert "src/fslab/base/vocab.py" in result.stdout and 'Explicit "Any"' in result.stdout


def test_the_same_elsewhere_passes(tmp_path):
    result = _mypy_on_copy(tmp_path, "base/hostfacts.py")
    assert result.returncode == 0, result.stdout
