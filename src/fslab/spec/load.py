"""Reading a spec: a preset or a file, with --quick, --set and the flags that set it.

The overrides are applied to the raw TOML data before validation, so an
override is validated exactly like the file; a spec that does not validate
is one SpecError listing every problem with its field.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fslab.base.errors import SpecError
from fslab.spec.model import ScalarValue, Spec
from fslab.workload.registry import kinds

PRESET_DIR = Path(__file__).parent / "presets"
MAX_SPEC_BYTES = 1024**2


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.toml"))


def preset_path(name: str) -> Path:
    path = PRESET_DIR / f"{name}.toml"
    if not path.is_file():
        raise SpecError(f"no preset named '{name}'. Presets: {', '.join(preset_names())}")
    return path


def read_spec_source(source: str) -> tuple[str, Path | None]:
    """Return (TOML text, file path or None) for a preset name or a spec file path."""
    candidate = Path(source)
    if candidate.suffix == ".toml" or candidate.exists():
        if not candidate.is_file():
            raise SpecError(f"spec file not found: {source}")
        try:
            if candidate.stat().st_size > MAX_SPEC_BYTES:
                raise SpecError(
                    f"{source}: the spec is larger than {MAX_SPEC_BYTES // 1024**2} MiB, "
                    "the most fslab reads"
                )
            return candidate.read_text(), candidate
        except UnicodeDecodeError as exc:
            raise SpecError(f"{source}: not valid TOML: not UTF-8 text ({exc.reason})") from None
        except OSError as exc:
            raise SpecError(f"{source}: cannot read the spec file: {exc.strerror}") from None
    return preset_path(source).read_text(), None


def parse_override(text: str) -> tuple[list[str], Any]:
    """Parse `key.path=value`; the value is TOML when it parses as TOML, else a string."""
    if "=" not in text:
        raise SpecError(f"--set {text!r}: expected key=value, e.g. --set run.repeat=5")
    key, raw_value = text.split("=", 1)
    path = [part for part in key.strip().split(".") if part]
    if not path:
        raise SpecError(f"--set {text!r}: empty key")
    try:
        value = tomllib.loads(f"v = {raw_value}")["v"]
    except ValueError:  # TOMLDecodeError, or an integer of thousands of digits
        value = raw_value
    except RecursionError:
        raise SpecError(f"--set {key.strip()}: the value nests deeper than TOML is read") from None
    return path, value


def apply_override(data: dict[str, Any], path: list[str], value: Any) -> None:
    """Set data[path] = value; numeric path parts index into lists (filesystems.0.type)."""
    node: Any = data
    for depth, part in enumerate(path[:-1]):
        where = ".".join(path[: depth + 1])
        if isinstance(node, list):
            node = node[_list_index(node, part, where)]
        elif isinstance(node, dict):
            node = node.setdefault(part, {})
        else:
            raise SpecError(f"--set {'.'.join(path)}: '{where}' is not a table")
    last = path[-1]
    if isinstance(node, list):
        node[_list_index(node, last, ".".join(path))] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise SpecError(f"--set {'.'.join(path)}: parent is not a table")


def _list_index(node: list[Any], part: str, where: str) -> int:
    if not part.isdigit() or int(part) >= len(node):
        raise SpecError(f"--set: '{where}' must be a list index below {len(node)}")
    return int(part)


def target_overrides(text: str) -> list[str]:
    """`--target ram | file:DIR | device:PATH` as --set overrides of [target]."""
    kind, _, path = text.partition(":")
    if kind == "ram" and not path:
        return ["target.kind=ram", 'target.path=""']
    if kind in ("file", "device") and path:
        return [f"target.kind={kind}", f"target.path={json.dumps(path)}"]
    raise SpecError(f"--target {text!r}: expected ram, file:DIR or device:/dev/X")


def guest_overrides(flags: Mapping[str, ScalarValue | None], swept: Iterable[str]) -> list[str]:
    """`--kernel`, `--cpus`, `--possible-cpus`, `--memory` as --set overrides of [vm].

    A flag for an axis the spec sweeps replaces that sweep with its one value
    (`--possible-cpus 1728` on a spec sweeping [2, 1728] runs 1728 only), so the
    points keep their labels and every point runs what was asked.
    """
    swept = set(swept)
    overrides = []
    for key, value in flags.items():
        if value is None:
            continue
        overrides.append(f"vm.{key}={json.dumps(value)}")
        if key in swept:
            overrides.append(f"sweep.{key}=[{json.dumps(value)}]")
    return overrides


def apply_quick(data: dict[str, Any]) -> None:
    """Shrink a spec to its smoke-sized form, as declared in its [quick] table.

    Shapes are checked here, before anything is indexed, so a malformed [quick]
    table is a SpecError naming it rather than a Python error.
    """
    quick = data.get("quick") or {}
    if not isinstance(quick, dict):
        raise SpecError("quick: must be a table (filesystems = [labels] and [quick.set])")
    keep = quick.get("filesystems")
    if keep:
        if not isinstance(keep, list) or not all(isinstance(label, str) for label in keep):
            raise SpecError("quick.filesystems: must be a list of configuration labels")
        filesystems = data.get("filesystems")
        if isinstance(filesystems, list):
            labels = [fs.get("label") for fs in filesystems if isinstance(fs, dict)]
            unknown = [label for label in keep if label not in labels]
            if unknown:
                raise SpecError(
                    f"quick.filesystems: {', '.join(unknown)} name no configuration "
                    f"(labels: {', '.join(map(str, labels)) or 'none'})"
                )
            data["filesystems"] = [
                fs for fs in filesystems if isinstance(fs, dict) and fs.get("label") in keep
            ]
    overrides = quick.get("set") or {}
    if not isinstance(overrides, dict):
        raise SpecError("quick.set: must be a table of field = value, like --set")
    for key, value in overrides.items():
        path = [part for part in str(key).split(".") if part]
        if not path:
            raise SpecError(f"quick.set: empty key {key!r}")
        if path[0] not in Spec.model_fields:
            raise SpecError(f"quick.set: {key!r}: '{path[0]}' is not a spec field")
        try:
            apply_override(data, path, value)
        except SpecError as exc:
            raise SpecError(f"quick.set: {exc}") from None
    if not quick:
        run = data.setdefault("run", {})
        if isinstance(run, dict):
            run["runtime"] = "3s"
            run["repeat"] = 1
        sweep = data.get("sweep") or {}
        if isinstance(sweep, dict):
            data["sweep"] = {
                axis: values[:2] if isinstance(values, list) else values
                for axis, values in sweep.items()
            }


def load_spec(
    source: str, *, overrides: Iterable[str] = (), quick: bool = False
) -> tuple[Spec, str]:
    """Load a preset or file, apply --quick and --set, validate. Returns (spec, source TOML)."""
    data, text = spec_data(source, overrides=overrides, quick=quick)
    return validate_spec(data, source), text


def spec_data(
    source: str, *, overrides: Iterable[str] = (), quick: bool = False
) -> tuple[dict[str, Any], str]:
    """A spec's raw TOML data with --quick and --set applied, not yet validated."""
    text, _ = read_spec_source(source)
    try:
        data = tomllib.loads(text)
    except ValueError as exc:  # TOMLDecodeError, or an integer of thousands of digits
        raise SpecError(f"{source}: not valid TOML: {exc}") from exc
    except RecursionError:
        raise SpecError(f"{source}: not valid TOML: nested deeper than fslab reads") from None
    if quick:
        apply_quick(data)
    for override in overrides:
        path, value = parse_override(override)
        apply_override(data, path, value)
    return data, text


def validate_spec(data: Mapping[str, Any], source: str = "spec") -> Spec:
    try:
        return Spec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(format_validation_error(exc, source)) from None
    except ValueError as exc:  # raised outside pydantic's wrapping, e.g. by a size parser
        raise SpecError(f"{source}: {exc}") from None


def format_validation_error(exc: ValidationError, source: str) -> str:
    lines = [f"{source}: invalid spec ({exc.error_count()} problem(s)):"]
    try:
        errors = exc.errors(include_input=False)
    except UnicodeEncodeError:  # pydantic cannot spell a message quoting text not UTF-8
        return f"{source}: invalid spec: a value is not UTF-8 text (a --set value or the file)"
    for error in errors:
        location = ".".join(
            str(part) if part != "" else '""' for part in error["loc"] if part not in kinds()
        )
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown field (check the spelling; `fslab presets show` prints examples)"
        if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
            expected = error.get("ctx", {}).get("expected_tags", ", ".join(map(repr, kinds())))
            location = f"{location}.kind" if location else "kind"
            message = f"must be one of {expected}"
        if not location and re.match(r"^[\w.]+: ", message):  # a model check naming its field
            lines.append(f"  - {message}")
        else:
            lines.append(f"  - {location or '(top level)'}: {message}")
    return "\n".join(lines)
