"""`fslab fleet run`: one campaign on every host of an Ansible inventory.

fslab plans, ansible-playbook does the rest: the shipped playbook installs
fslab and its Debian packages on each host, checks the host with `fslab
doctor`, and runs the campaign there with that host's own allowed devices
(`fslab_allow_devices` in the inventory). Results go to the shared store, or,
for a host that cannot reach it, into the host's own database; that campaign
is exported, fetched back and imported here. Hosts run in parallel; one that
fails or drops out is reported and the others finish. The same fleet run
started again (same spec, same options) has the same key: each host resumes
its unfinished campaign and leaves a finished one alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import fslab
from fslab.base.errors import FslabError, UsageError
from fslab.fleet.inventory import ANSIBLE_ENV, read_inventory
from fslab.fleet.state import FleetState, HostOutcome, fleet_dir, host_outcomes
from fslab.store.db import Store, utc_now
from fslab.store.exchange import check_export, import_campaign, read_export
from fslab.workload.registry import packages

# what `make deps` installs (the Makefile's DEB_PACKAGES; a test keeps them equal)
# what every host needs besides the benchmarks: mkfs for each filesystem, perf, losetup, mdadm
SYSTEM_PACKAGES = ("xfsprogs", "e2fsprogs", "btrfs-progs", "linux-perf", "util-linux", "mdadm")
DEBIAN_PACKAGES = (*packages(), *SYSTEM_PACKAGES)  # the Makefile's DEB_PACKAGES, in order


@dataclass(frozen=True)
class FleetPlan:
    inventory: Path
    spec: str  # a preset name or a spec file
    run_args: tuple[str, ...]  # --quick, --set K=V ..., as given to `fslab run`
    db: str  # the shared store ('' : every host runs locally and results are fetched)
    limit: str | None = None
    fresh: bool = False  # a new key: start over instead of resuming

    def spec_text(self) -> str:
        path = Path(self.spec)
        return path.read_text() if path.is_file() else ""

    def key(self) -> str:
        """Same spec text and options: the same fleet run, resumed."""
        basis = json.dumps([self.spec_text() or self.spec, list(self.run_args)])
        if self.fresh:
            basis += utc_now()
        return hashlib.sha256(basis.encode()).hexdigest()[:12]


def _source_tree() -> Path | None:
    """fslab's source tree when it runs from one (pip install -e), to build a wheel."""
    root = Path(fslab.__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() else None


def build_wheel(dest: Path) -> Path:
    """The wheel of this fslab the playbook installs on hosts lacking fslab_command."""
    source = _source_tree()
    if source is None:
        raise FslabError(
            "fslab fleet run installs fslab from its source tree, and this fslab was not "
            "installed from one; set fslab_command in the inventory for every host "
            "(an fslab already installed there)"
        )
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("fslab-*.whl"):
        old.unlink()
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dest), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    wheels = sorted(dest.glob("fslab-*.whl"))
    if proc.returncode != 0 or not wheels:
        raise FslabError(f"building fslab's wheel failed: {proc.stderr.strip()[-500:]}")
    return wheels[-1]


def _ansible_playbook() -> str:
    beside = Path(sys.executable).parent / "ansible-playbook"
    found = str(beside) if beside.exists() else shutil.which("ansible-playbook")
    if found is None:
        raise FslabError(
            "ansible-playbook is missing: reinstall fslab (it depends on ansible-core)"
        )
    return found


def check_shared_store(db: str) -> None:
    """The controller must reach the store it will import into and report from."""
    with Store(db):
        pass


def run_fleet(plan: FleetPlan, *, echo: Callable[[str], None]) -> list[HostOutcome]:
    """Run the playbook; returns each host's outcome (ansible's own output goes to echo)."""
    read_inventory(plan.inventory)  # refused before anything is created or started
    if plan.db:
        check_shared_store(plan.db)
    key = plan.key()
    work = fleet_dir() / key
    work.mkdir(parents=True, exist_ok=True)
    state = FleetState.start(work, key=key, spec=plan.spec, db=plan.db, inventory=plan.inventory)
    wheel = build_wheel(work / "dist")
    fetch_dir = work / "fetched"
    fetch_dir.mkdir(exist_ok=True)
    variables = {
        "fslab_fleet_key": key,
        "fslab_fleet_spec": plan.spec,
        "fslab_fleet_spec_text": plan.spec_text(),
        "fslab_fleet_run_args": list(plan.run_args),
        "fslab_fleet_db": plan.db,
        "fslab_fleet_wheel": str(wheel),
        "fslab_fleet_wheel_sha": hashlib.sha256(wheel.read_bytes()).hexdigest()[:12],
        "fslab_fleet_fetch_dir": str(fetch_dir),
        "fslab_fleet_debian_packages": list(DEBIAN_PACKAGES),
    }
    playbook = resources.files("fslab.fleet") / "playbook.yml"
    with tempfile.NamedTemporaryFile("w", suffix=".json", dir=work, delete=False) as handle:
        os.chmod(handle.name, 0o600)  # the store URL may hold a password
        json.dump(variables, handle)
    argv = [_ansible_playbook(), "-i", str(plan.inventory), str(playbook), "-e", f"@{handle.name}"]
    if plan.limit:
        argv += ["--limit", plan.limit]
    try:
        _run_playbook(argv, state.events_path, echo)
    finally:
        os.unlink(handle.name)
    outcomes = host_outcomes(state.events())
    if plan.db:
        _import_fetched(plan.db, fetch_dir, outcomes, echo)
    state.finish(outcomes)
    return outcomes


def _run_playbook(argv: Sequence[str], events: Path, echo: Callable[[str], None]) -> int:
    callbacks = resources.files("fslab.fleet") / "callback_plugins"
    env = {
        **os.environ,
        "ANSIBLE_CALLBACK_PLUGINS": str(callbacks),
        "ANSIBLE_CALLBACKS_ENABLED": "fslab_events",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_LOCALHOST_WARNING": "False",
        "ANSIBLE_FORCE_COLOR": "False",
        "FSLAB_FLEET_EVENTS": str(events),
        **ANSIBLE_ENV,  # the inventory read as read_inventory checked it
    }
    with subprocess.Popen(
        list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            echo(line.rstrip("\n"))
        return proc.wait()


def _import_fetched(
    db: str, fetch_dir: Path, outcomes: list[HostOutcome], echo: Callable[[str], None]
) -> None:
    """Import the campaigns of hosts that ran locally (a newer export replaces an older one)."""
    by_host = {o.host: o for o in outcomes}
    with Store(db) as store:
        for path in sorted(fetch_dir.glob("*.json")):
            try:  # a host's export is checked as any import is; one bad host stops no other
                new_id = replace_campaign(store, read_export(path))
            except UsageError as exc:
                echo(f"{path.stem}: the fetched export is refused: {exc}")
                if path.stem in by_host:
                    by_host[path.stem].note = f"fetched back, refused: {exc} (kept in {path})"
                continue
            echo(f"{path.stem}: campaign fetched back and imported as {new_id}")
            if path.stem in by_host:
                by_host[path.stem].note = f"fetched back, imported as campaign {new_id}"
            path.unlink()


def replace_campaign(store: Store, data: dict[str, Any]) -> int:
    """Import an export; the same campaign imported before is replaced by this one
    (checked first: a malformed export replaces nothing)."""
    exported = check_export(data).campaign
    for row in store.campaigns(host=exported.host_name or None):
        if row.name == exported.name and row.started_at == exported.started_at:
            store.delete_campaign(row.id)
    return import_campaign(store, data)
