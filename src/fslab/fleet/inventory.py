"""A fleet's inventory, read and checked before ansible-playbook is started.

An inventory may come from someone else (a shared fleet, a generated file),
and its values reach ansible on this machine: a host's name becomes the file
its export is fetched back to, fslab's own variables are rendered into the
playbook's tasks, and ansible renders any `{{ ... }}` it finds, which can run
a lookup on the controller. So fslab parses the inventory with ansible's own
INI and YAML parsers (the ones `fslab fleet run` then lets ansible use: no
inventory scripts, no inventory plugins, which would run code to produce the
hosts) and refuses, naming the host or group and the variable:

- a host name that is not a plain host name or address (a `/`, a space, a
  shell or template character, a leading dot or dash);
- a template (`{{`, `{%`, `{#`) or a NUL in any value;
- an `fslab_*` variable fslab does not know, or one of the wrong shape;
- connection variables that make ansible run a command of the inventory's
  choosing on this machine (an ssh `ProxyCommand`, an interpreter with shell
  syntax).

The playbook quotes every value it passes to a shell (docs/security.md).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fslab.base.errors import UsageError

INVENTORY_PLUGINS = ("yaml", "ini")
"""The only inventory parsers ansible may use for a fleet run (no scripts, no plugins),
in ansible's own order: YAML first (it takes .yml, .yaml and .json files), as the INI
parser would read a JSON inventory as hosts named '{'."""
ANSIBLE_ENV = {
    "ANSIBLE_INVENTORY_ENABLED": ",".join(INVENTORY_PLUGINS),
    "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True",
    "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "True",
}
"""ansible-playbook's environment for a fleet run: the inventory read as it was checked."""

MAX_INVENTORY_BYTES = 1024**2
"""An inventory file (or all files of an inventory directory) larger than this is refused."""
MAX_HOSTS = 1000

_HOST_RE = re.compile(r"^[A-Za-z0-9_:\[][A-Za-z0-9_.:\[\]-]{0,252}$")
_TEMPLATE_RE = re.compile(r"\{\{|\{%|\{#")
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_DEVICE_RE = re.compile(r"^/dev/[A-Za-z0-9_.:+/-]+$")
_PLAIN_COMMAND_RE = re.compile(r"^/[A-Za-z0-9_.+/-]+( [A-Za-z0-9_.+=/-]+)*$")
_SSH_COMMAND_RE = re.compile(r"command|(^|\s)-[A-Za-z]*F", re.IGNORECASE)
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")

FSLAB_VARIABLES = (
    "fslab_allow_devices",
    "fslab_target",
    "fslab_home",
    "fslab_command",
    "fslab_install_debs",
    "fslab_db",
    "fslab_path",
    "fslab_environment",
)
"""The inventory variables the shipped playbook reads (docs/fleet.md)."""

_SSH_ARGS = (
    "ansible_ssh_common_args",
    "ansible_ssh_extra_args",
    "ansible_ssh_args",
    "ansible_sftp_extra_args",
    "ansible_scp_extra_args",
)
_EXECUTABLES = (
    "ansible_python_interpreter",
    "ansible_shell_executable",
    "ansible_ssh_executable",
    "ansible_become_exe",
)


@dataclass(frozen=True)
class InventoryHost:
    """One host as ansible will see it, with its own (host-level) variables."""

    name: str
    variables: Mapping[str, Any]


def read_inventory(path: Path) -> list[InventoryHost]:
    """The inventory's hosts, checked; UsageError (exit 2) naming what is refused."""
    _check_size(path)
    manager = _parse(path)
    hosts = list(manager.hosts.values())
    if not hosts:
        raise UsageError(f"inventory {path}: no hosts")
    if len(hosts) > MAX_HOSTS:
        raise UsageError(
            f"inventory {path}: {len(hosts)} hosts; a fleet run takes at most {MAX_HOSTS}"
        )
    for group in manager.groups.values():
        _check_variables(f"inventory {path}: group {group.name!r}", group.get_vars())
    checked = []
    for host in hosts:
        name = str(host.name)
        if not _HOST_RE.match(name) or ".." in name:
            raise UsageError(
                f"inventory {path}: host name {name!r}: a fleet host is named by letters, "
                "digits, '.', '-', '_' (or an IPv6 address): the name becomes the file its "
                "results are fetched back to"
            )
        own = {k: v for k, v in host.get_vars().items() if k not in _ANSIBLE_SET}
        _check_variables(f"inventory {path}: host {name!r}", own)
        checked.append(InventoryHost(name, own))
    return checked


# what ansible adds to every host's variables itself
_ANSIBLE_SET = frozenset(
    {"inventory_file", "inventory_dir", "inventory_hostname", "inventory_hostname_short"}
    | {"group_names"}
)


def _check_size(path: Path) -> None:
    try:
        if path.is_dir():
            size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        else:
            size = path.stat().st_size
    except FileNotFoundError:
        raise UsageError(f"inventory {path}: no such file") from None
    except OSError as exc:
        raise UsageError(f"inventory {path}: cannot read it: {exc.strerror}") from None
    if size > MAX_INVENTORY_BYTES:
        raise UsageError(
            f"inventory {path}: larger than {MAX_INVENTORY_BYTES // 1024**2} MiB, the most "
            "fslab reads"
        )


def _parse(path: Path) -> Any:
    """ansible's InventoryManager over the file, with the INI and YAML parsers only."""
    from ansible import constants
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader

    with (
        _settings(
            constants,
            INVENTORY_ENABLED=list(INVENTORY_PLUGINS),
            INVENTORY_UNPARSED_IS_FAILED=True,
            INVENTORY_ANY_UNPARSED_IS_FAILED=True,
        ),
        _quiet_display(),
    ):
        try:
            return InventoryManager(loader=DataLoader(), sources=[str(path)])
        except AnsibleError as exc:
            first = str(exc.message).strip().splitlines()
            raise UsageError(
                f"inventory {path}: ansible cannot read it as an INI or YAML inventory"
                + (f": {first[0]}" if first else "")
            ) from None
        except (ValueError, TypeError, RecursionError, UnicodeError) as exc:
            raise UsageError(f"inventory {path}: not an inventory ansible reads: {exc}") from None


@contextlib.contextmanager
def _settings(module: Any, **values: Any) -> Iterator[None]:
    before = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            setattr(module, name, value)


@contextlib.contextmanager
def _quiet_display() -> Iterator[None]:
    """ansible's warnings and deprecations about the files it reads: the UsageError says
    what fslab refuses, and ansible-playbook says the rest when it runs."""
    from ansible.utils.display import Display

    display = Display()
    names = ("warning", "error_as_warning", "deprecated")
    saved = {name: getattr(display, name) for name in names}
    for name in names:
        setattr(display, name, lambda *args, **kwargs: None)
    try:
        yield
    finally:
        for name, method in saved.items():
            setattr(display, name, method)


def _check_variables(where: str, variables: Mapping[str, Any]) -> None:
    for name, value in variables.items():
        name = str(name)
        for text in _strings(value, depth=0):
            if "\x00" in text:
                raise UsageError(f"{where}: {name}: a NUL character")
            if _TEMPLATE_RE.search(text):
                raise UsageError(
                    f"{where}: {name}: a template ({{{{ ... }}}}): ansible would evaluate it on "
                    "this machine; a fleet inventory holds plain values"
                )
        if name.startswith("fslab_"):
            _check_fslab_variable(where, name, value)
        elif name in _SSH_ARGS and isinstance(value, str) and _SSH_COMMAND_RE.search(value):
            raise UsageError(
                f"{where}: {name}: {value!r} makes ssh run a command (or read a config) of "
                "the inventory's choosing on this machine; fslab refuses it"
            )
        elif name in _EXECUTABLES and isinstance(value, str) and not _plain_executable(value):
            raise UsageError(
                f"{where}: {name}: {value!r} is not a plain path (with plain arguments); "
                "ansible runs it through a shell"
            )


def _strings(value: Any, depth: int) -> Iterator[str]:
    if depth > 16:
        raise UsageError("inventory: a value nested deeper than 16 levels")
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item, depth + 1)


def _plain_executable(value: str) -> bool:
    return (value.startswith("auto") and value.isidentifier()) or bool(
        _PLAIN_COMMAND_RE.match(value)
    )


def _check_fslab_variable(where: str, name: str, value: Any) -> None:
    field = f"{where}: {name}"
    if name not in FSLAB_VARIABLES:
        raise UsageError(
            f"{field}: not a variable fslab's playbook reads ({', '.join(FSLAB_VARIABLES)})"
        )
    if name == "fslab_allow_devices":
        if not isinstance(value, list) or not all(isinstance(d, str) for d in value):
            raise UsageError(f"{field}: a list of device paths, e.g. ['/dev/nvme1n1']")
        for device in value:
            if not _DEVICE_RE.match(device) or ".." in device:
                raise UsageError(f"{field}: {device!r} is not a device path under /dev")
    elif name == "fslab_install_debs":
        if not isinstance(value, bool | int) and value not in ("true", "false", "yes", "no"):
            raise UsageError(f"{field}: true or false")
    elif name == "fslab_environment":
        if not isinstance(value, Mapping):
            raise UsageError(f"{field}: a table of NAME: value")
        for key, item in value.items():
            if not isinstance(key, str) or not _ENV_NAME_RE.match(key):
                raise UsageError(f"{field}: {key!r} is not an environment variable name")
            if not isinstance(item, str | int | float | bool):
                raise UsageError(f"{field}.{key}: a plain value")
    else:
        if not isinstance(value, str):
            raise UsageError(f"{field}: a string")
        if _CONTROL_RE.search(value):
            raise UsageError(f"{field}: a control character")
        _check_fslab_string(field, name, value)


def _check_fslab_string(field: str, name: str, value: str) -> None:
    if name == "fslab_target":
        kind, _, rest = value.partition(":")
        if not (
            (kind == "ram" and not rest)
            or (kind == "file" and rest.startswith("/"))
            or (kind == "device" and _DEVICE_RE.match(rest) and ".." not in rest)
        ):
            raise UsageError(f"{field}: {value!r}: ram, file:/DIR or device:/dev/X")
    elif name in ("fslab_home", "fslab_command") and not value.startswith("/"):
        raise UsageError(f"{field}: {value!r} is not an absolute path")
    elif name == "fslab_path" and not all(part.startswith("/") for part in value.split(":")):
        raise UsageError(f"{field}: {value!r}: absolute directories separated by ':'")
