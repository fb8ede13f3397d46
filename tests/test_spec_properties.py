"""Property-based tests: any bad spec or --set ends in a clear SpecError, never a traceback.

Generated inputs: random and truncated TOML, wrongly typed and absurd values
at every known field, unknown keys, random --set overrides, and mkfs and fio
options the tools reject. Each goes through `load_spec` and through the CLI
entry point in-process; each must end as a SpecError (exit code 2) whose
message names the field, or as a valid spec, and must leave no loop device,
mount or image behind. A valid spec reaching the CLI stops where the campaign
would be created.

FSLAB_HYPOTHESIS_PROFILE=full tries >= 1000 inputs (a few minutes); the
default `fast` profile keeps `make test` quick. The count tried is printed at
the end of the module.
"""

from __future__ import annotations

import copy
import json
import math
import os
import tempfile
import tomllib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from fslab import cli
from fslab.base.errors import SpecError
from fslab.run import preflight
from fslab.spec.load import load_spec, preset_names, preset_path, validate_spec
from fslab.spec.model import Spec
from tests.conftest import requires_root
from tests.pid_leaks import owned_by

settings.register_profile(
    "fslab-fast",
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "fslab-full",
    max_examples=220,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
PROFILE_NAME = os.environ.get("FSLAB_HYPOTHESIS_PROFILE", "fast")
PROFILE = settings.get_profile(f"fslab-{PROFILE_NAME}")
SLOW = settings(PROFILE, max_examples=max(5, PROFILE.max_examples // 3))  # real mkfs, fio

TRIED: Counter[str] = Counter()

BASE: dict[str, Any] = {
    "name": "prop",
    "description": "property test",
    "target": {"kind": "ram", "size": "1GiB"},
    "filesystems": [
        {"label": "a", "type": "ext4", "mkfs_options": [], "mount_options": ["noatime"]},
        {"label": "b", "type": "xfs"},
    ],
    "workload": {"kind": "fio", "options": {"rw": "randwrite", "bs": "4k", "filesize": "4m"}},
    "sweep": {"numjobs": [1, 2]},
    "fill": {},
    "run": {"repeat": 1, "runtime": "1s"},
    "collect": {"perf": False},
    "quick": {"filesystems": ["a"], "set": {"run.runtime": "1s"}},
}

FIELDS = [
    "name",
    "description",
    "target",
    "target.kind",
    "target.size",
    "target.path",
    "filesystems",
    "filesystems.0",
    "filesystems.0.label",
    "filesystems.0.type",
    "filesystems.0.mkfs_options",
    "filesystems.0.mount_options",
    "filesystems.1.type",
    "filesystems.1.description",
    "workload",
    "workload.kind",
    "workload.options",
    "workload.options.bs",
    "workload.options.numjobs",
    "workload.options.runtime",
    "workload.command_line",
    "workload.job_file",
    "workload.count",
    "sweep",
    "sweep.numjobs",
    "sweep.bs",
    "sweep.fill_percent",
    "sweep.fill_leave_free",
    "fill",
    "fill.percent",
    "fill.leave_free",
    "run",
    "run.repeat",
    "run.order",
    "run.runtime",
    "run.ramp",
    "run.seed",
    "run.timeout_factor",
    "run.setup_timeout",
    "collect",
    "collect.perf",
    "collect.perf_freq_hz",
    "quick",
    "quick.filesystems",
    "quick.set",
]

ABSURD = {
    "target.size": ["-1GiB", "0", "1k", "999TiB", "lots", 0, -5, 10**15],
    "filesystems.0.type": ["ext5", "ntfs", "", "EXT4", 4],
    "sweep.numjobs": [[0], [10**9], [-1], [1.5], ["many"], [], [True]],
    "workload.options.numjobs": [0, 10**9, -1, "many"],
    "run.runtime": ["0", "0s", "-1s", "forever", 0, "9999h"],
    "workload.options.runtime": [0, "0s", "-5", "soon"],
    "run.repeat": [0, -1, 10**9, "twice"],
    "run.timeout_factor": [0, -1.0, 1e9, "high"],
    "run.setup_timeout": ["0s", "-1", "never"],
    "fill.percent": [100, 150, -1, "full"],
    "fill.leave_free": ["-1GiB", "lots"],
    "sweep.fill_percent": [[100], [-3], ["x"]],
    "collect.perf_freq_hz": [0, -1, 10**9],
    "workload.kind": ["fiio", "", 3],
    "run.order": ["backwards", 1],
}

# ------------------------------------------------------------------ TOML writing


def toml_string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's, except DEL which TOML wants escaped)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        pairs = ", ".join(f"{toml_string(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{" + pairs + "}"
    raise TypeError(f"no TOML for {value!r}")


def to_toml(data: dict[str, Any]) -> str:
    return "".join(f"{toml_string(k)} = {toml_value(v)}\n" for k, v in data.items())


# ------------------------------------------------------------------ strategies

scalars = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.booleans(),
    st.sampled_from(["1GiB", "4k", "30s", "0", "-1", "ext4", "xfs", "fio", "dd", ""]),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
key_words = st.text(
    alphabet=st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=8
)


def set_path(data: dict[str, Any], path: str, value: Any) -> None:
    """data[path] = value, creating tables on the way; list indexes must exist."""
    node: Any = data
    parts = path.split(".")
    for part in parts[:-1]:
        if isinstance(node, list):
            node = node[int(part)]
        else:
            node = node.setdefault(part, {})
            if not isinstance(node, dict | list):
                return
    if isinstance(node, list):
        node[int(parts[-1])] = value
    else:
        node[parts[-1]] = value


def spec_file(directory: str, text: str | bytes) -> str:
    path = Path(directory) / "spec.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return str(path)


def names_field(message: str, path: str) -> bool:
    """The message names the field: its full path, a field inside it (a table set
    wholesale), or the first unknown table on its way (`0: unknown field` for 0.0)."""
    if path in message:
        return True
    parts = path.split(".")
    return any(f"{'.'.join(parts[:i])}: unknown field" in message for i in range(1, len(parts)))


@pytest.fixture(scope="module", autouse=True)
def report_count(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    reporter = request.config.pluginmanager.getplugin("terminalreporter")
    total = sum(TRIED.values())
    line = (
        f"spec properties ({PROFILE_NAME} profile): {total} generated inputs tried: "
        + ", ".join(f"{k} {v}" for k, v in sorted(TRIED.items()))
    )
    capture = request.config.pluginmanager.getplugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line("\n" + line)


def load_text(
    text: str | bytes, *, overrides: tuple[str, ...] = (), quick: bool = False
) -> Spec | SpecError:
    """load_spec on a temporary file: the spec, or the SpecError (anything else fails the test)."""
    with tempfile.TemporaryDirectory(prefix="fslab-prop-") as directory:
        try:
            return load_spec(spec_file(directory, text), overrides=overrides, quick=quick)[0]
        except SpecError as exc:
            return exc


# ------------------------------------------------------------------ load_spec


def test_toml_writer_round_trips() -> None:
    assert tomllib.loads(to_toml(BASE)) == BASE
    assert isinstance(load_text(to_toml(BASE)), Spec)


@PROFILE
@given(path=st.sampled_from(FIELDS), value=values, quick=st.booleans())
def test_any_value_at_any_field(path: str, value: Any, quick: bool) -> None:
    TRIED["wrong types"] += 1
    data = copy.deepcopy(BASE)
    set_path(data, path, value)
    outcome = load_text(to_toml(data), quick=quick)
    if isinstance(outcome, SpecError):
        # with --quick, a changed label can orphan [quick].filesystems: that is named instead
        message = str(outcome)
        assert names_field(message, path) or (quick and "quick." in message), message


@PROFILE
@given(data=st.data())
def test_absurd_values_are_refused_by_name(data: st.DataObject) -> None:
    TRIED["absurd values"] += 1
    path = data.draw(st.sampled_from(sorted(ABSURD)))
    value = data.draw(st.sampled_from(ABSURD[path]))
    spec = copy.deepcopy(BASE)
    set_path(spec, path, value)
    outcome = load_text(to_toml(spec))
    assert isinstance(outcome, SpecError), f"{path}={value!r} was accepted"
    assert names_field(str(outcome), path), str(outcome)


@PROFILE
@given(
    table=st.sampled_from(["", "target", "run", "fill", "collect", "filesystems.0"]), key=key_words
)
def test_unknown_keys_are_named(table: str, key: str) -> None:
    TRIED["unknown keys"] += 1
    data = copy.deepcopy(BASE)
    path = f"{table}.{key}" if table else key
    set_path(data, path, 1)
    outcome = load_text(to_toml(data))
    if isinstance(outcome, Spec):  # the key was a real field after all (e.g. run.seed)
        return
    assert names_field(str(outcome), path), str(outcome)


@PROFILE
@given(text=st.one_of(st.text(max_size=200), st.binary(max_size=200)))
def test_random_text(text: str | bytes) -> None:
    TRIED["random text"] += 1
    outcome = load_text(text)
    if isinstance(outcome, SpecError):
        assert "spec.toml" in str(outcome)


@PROFILE
@given(name=st.sampled_from(preset_names()), cut=st.floats(min_value=0, max_value=1))
def test_truncated_presets(name: str, cut: float) -> None:
    TRIED["truncated TOML"] += 1
    text = preset_path(name).read_text()
    outcome = load_text(text[: int(len(text) * cut)])
    if isinstance(outcome, SpecError):
        assert "spec.toml" in str(outcome)


set_keys = st.one_of(
    st.sampled_from(FIELDS),
    st.lists(key_words | st.sampled_from(["0", "1", "9"]), min_size=1, max_size=4).map(".".join),
)
set_values = st.one_of(
    st.text(max_size=20),
    scalars.map(toml_value),
    values.map(toml_value),
    st.sampled_from(["[1,64,2048]", "[0]", "5", "true", '"text"', "30s", "[", "{", "=", ""]),
)


@PROFILE
@given(key=set_keys, value=set_values, quick=st.booleans())
def test_set_overrides(key: str, value: str, quick: bool) -> None:
    TRIED["--set overrides"] += 1
    outcome = load_text(to_toml(BASE), overrides=(f"{key}={value}",), quick=quick)
    if isinstance(outcome, SpecError):
        assert names_field(str(outcome), key) or "--set" in str(outcome), str(outcome)


# ------------------------------------------------------------------ the CLI, in-process


class WouldRun(Exception):
    """Raised where the CLI would create the campaign: the input was valid."""


def invoke_run(text: str, *args: str) -> tuple[int | None, str, BaseException | None]:
    """`fslab run SPEC ARGS` in-process; stops before anything is created for a valid spec."""
    with tempfile.TemporaryDirectory(prefix="fslab-prop-") as directory:
        path = spec_file(directory, text)
        db = str(Path(directory) / "r.db")
        with mock.patch.object(cli.run, "start_campaign", side_effect=WouldRun):
            result = CliRunner().invoke(cli.app, ["run", path, "--db", db, *args])
    exception = result.exception if not isinstance(result.exception, SystemExit) else None
    return result.exit_code, result.output, exception


def assert_clean_refusal(
    exit_code: int | None, output: str, exception: BaseException | None
) -> None:
    if isinstance(exception, WouldRun):
        return
    assert exception is None, f"unexpected {exception!r}\n{output}"
    assert exit_code == 2, output
    assert "Traceback" not in output
    assert output.startswith("fslab: "), output
    assert owned_by([os.getpid()]).empty(), "the CLI left a device behind"


@PROFILE
@given(path=st.sampled_from(FIELDS), value=values, key=set_keys, set_value=set_values)
def test_cli_spec_and_set(path: str, value: Any, key: str, set_value: str) -> None:
    TRIED["CLI spec + --set"] += 1
    data = copy.deepcopy(BASE)
    set_path(data, path, value)
    exit_code, output, exception = invoke_run(
        to_toml(data), "--no-preflight", "--set", f"{key}={set_value}"
    )
    assert_clean_refusal(exit_code, output, exception)


@PROFILE
@given(data=st.data())
def test_cli_absurd_values(data: st.DataObject) -> None:
    TRIED["CLI absurd values"] += 1
    path = data.draw(st.sampled_from(sorted(ABSURD)))
    value = data.draw(st.sampled_from(ABSURD[path]))
    spec = copy.deepcopy(BASE)
    set_path(spec, path, value)
    exit_code, output, exception = invoke_run(to_toml(spec), "--no-preflight")
    assert not isinstance(exception, WouldRun), f"{path}={value!r} was accepted"
    assert_clean_refusal(exit_code, output, exception)
    assert names_field(" ".join(output.split()), path), output


# ------------------------------------------------------------------ what only the tools know

BAD_MKFS = {
    "ext4": [
        ["-J", "size=bogus"],
        ["-b", "3"],
        ["-O", "no_such_feature"],
        ["-E", "stride=x"],
        ["--bogus"],
        ["-N", "-5"],
    ],
    "xfs": [
        ["-b", "size=3000"],
        ["-d", "agcount=0"],
        ["-l", "size=1k"],
        ["-m", "crc=7"],
        ["--bogus"],
    ],
}
BAD_MOUNT = {
    "ext4": ["bogus", "data=sideways", "commit=-1", "journal_ioprio=99", "errors=explode"],
    "xfs": ["bogus", "logbsize=3k", "allocsize=1", "logbufs=99"],
}
BAD_FIO = [
    ("rw", "sideways"),
    ("bs", "abc"),
    ("ioengine", "nonexistent"),
    ("fsync", "x"),
    ("direct", "5"),
    ("bogus_option", "1"),
    ("rwmixread", "150"),
    ("numjobs", "0"),
    ("numjobs", "1000000000"),
    ("verify", "md17"),
]


@requires_root
@SLOW
@given(data=st.data())
def test_tool_rejections_are_named(data: st.DataObject) -> None:
    """mkfs options mkfs rejects, mount options the kernel rejects, fio options fio
    rejects: preflight names the field, and the CLI exits 2 having created nothing."""
    TRIED["tool-rejected options"] += 1
    spec = copy.deepcopy(BASE)
    kind = data.draw(st.sampled_from(["mkfs", "mount", "fio"]))
    index = data.draw(st.sampled_from([0, 1]))
    fs_type = spec["filesystems"][index]["type"]
    if kind == "mkfs":
        path = f"filesystems.{index}.mkfs_options"
        spec["filesystems"][index]["mkfs_options"] = data.draw(st.sampled_from(BAD_MKFS[fs_type]))
    elif kind == "mount":
        path = f"filesystems.{index}.mount_options"
        spec["filesystems"][index]["mount_options"] = [
            data.draw(st.sampled_from(BAD_MOUNT[fs_type]))
        ]
    else:
        name, value = data.draw(st.sampled_from(BAD_FIO))
        as_sweep = data.draw(st.booleans()) and name != "numjobs"
        if as_sweep:
            path = f"sweep.{name}"
            spec["sweep"][name] = [value]
        else:
            path = "workload.options"
            spec["workload"]["options"][name] = value
    exit_code, output, exception = invoke_run(to_toml(spec))
    assert not isinstance(exception, WouldRun), f"{path}: accepted\n{output}"
    assert_clean_refusal(exit_code, output, exception)
    assert names_field(" ".join(output.split()), path), output


@SLOW
@given(
    options=st.lists(
        st.sampled_from(
            [
                "-q",
                "-F",
                "-b",
                "4096",
                "-J",
                "size=4",
                "-O",
                "^has_journal",
                "-E",
                "bogus",
                "-m",
                "5",
                "-x",
            ]
        ),
        max_size=4,
    )
)
def test_mkfs_check_needs_no_loop_device(options: list[str]) -> None:
    """Whatever the options, check_mkfs answers with named problems or none, on a plain file."""
    TRIED["random mkfs options"] += 1
    spec = copy.deepcopy(BASE)
    spec["filesystems"][0]["mkfs_options"] = options
    problems = preflight.check_mkfs(validate_spec(spec))
    for problem in problems:
        assert problem.field == "filesystems.0.mkfs_options", problem
        assert "mkfs.ext4 rejected" in problem.message
    assert owned_by([os.getpid()]).empty()
