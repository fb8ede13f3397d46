"""The Setup section: the host, the target device, the workload and each filesystem,
as the spec asked for them and as they were really built.

Kept apart from the rest of the assembly because it reads a different half
of the store: the campaign's spec and host facts and the facts and commands
each point stored as it was set up, not the measurements. The prose here
(device, workload) is written once so every format prints the same words.
"""

from __future__ import annotations

from fslab.analyze.campaign.dataset import CampaignData
from fslab.analyze.versus.guests import TCG_CAVEAT, guest_label, runs_under_tcg
from fslab.base.format import format_bytes
from fslab.report.tree import FilesystemSetup, Setup
from fslab.spec.model import FilesystemSpec
from fslab.store.db import Store
from fslab.store.facts import DeviceFacts, DeviceLimitFacts, FilesystemFacts, PointFacts
from fslab.target.limits import DeviceLimits
from fslab.workload.base import WorkloadSpec
from fslab.workload.registry import benchmark_for


def build_setup(store: Store, data: CampaignData) -> Setup:
    """The Setup section, from the campaign's spec and host and its points' facts."""
    spec = data.campaign.spec
    notes = []
    host = data.campaign.host
    if not host.to_dict():
        notes.append("no host facts were stored with this campaign")
    configs = data.configs()
    fs_specs = {fs.label: fs for fs in spec.filesystems}
    filesystems = [_filesystem(store, data, c, fs_specs.get(c)) for c in configs]
    guests = [p.facts.guest for p in data.points if p.facts.guest is not None]
    if runs_under_tcg(guests):
        notes.append(TCG_CAVEAT)
    return Setup(
        host=host,
        device=data.campaign.device,
        device_text=_device_text(data.campaign.device, _device_limits(data)),
        filesystems=filesystems,
        workload=spec.workload,
        workload_text=_workload_text(spec.workload),
        sweep={k: list(v) for k, v in spec.sweep.items()},
        run=spec.run.model_dump(mode="json", exclude_unset=True),
        notes=notes,
        guests=list(dict.fromkeys(guest_label(g) for g in guests)),
    )


def _device_limits(data: CampaignData) -> str:
    """target.limits as applied (the point facts), in words; empty without limits."""
    applied = next((p.facts.device_limits for p in data.points if p.facts.device_limits), None)
    if not applied:
        return ""
    return f"limited to {applied_limits(applied).describe()} ({applied.how})"


def applied_limits(applied: DeviceLimitFacts) -> DeviceLimits:
    """The limits a point stored as applied, as target.limits describes them."""
    return DeviceLimits(applied.read_iops, applied.write_iops, applied.read_bps, applied.write_bps)


def _device_text(device: DeviceFacts | None, limits: str = "") -> str:
    text = _device_base_text(device)
    return f"{text}; {limits}" if limits else text


def _device_base_text(device: DeviceFacts | None) -> str:
    if device is None or not device.stored():
        return "not recorded"
    size = device.size_bytes
    size_text = f"{format_bytes(size)} " if size else ""
    if device.kind == "ram":
        return f"{size_text}sparse loop image in {device.image_dir or '/dev/shm'} (RAM)"
    if device.kind == "file":
        return f"{size_text}sparse loop image in {device.image_dir or '?'}"
    path = device.path or "?"
    return f"block device {path} {size_text}".strip()


def _workload_text(workload: WorkloadSpec) -> list[str]:
    """The workload as its benchmark describes it (workload/<kind>/benchmark.py)."""
    return benchmark_for(workload).describe(workload)


def _filesystem(
    store: Store, data: CampaignData, config: str, fs_spec: FilesystemSpec | None
) -> FilesystemSetup:
    points = [p for p in data.points if p.config == config]
    fs_type = points[0].fs_type if points else fs_spec.type if fs_spec else "?"
    with_facts = next((p for p in points if p.facts.filesystem), None)
    commands = next((store.commands(p.id) for p in points if store.commands(p.id)), [])
    mkfs = next((argv for argv in commands if argv and argv[0].startswith("mkfs")), None)
    mount = next((argv for argv in commands if argv and argv[0] == "mount"), None)
    notes = []
    facts = with_facts.facts if with_facts else PointFacts()
    fs_facts = facts.filesystem or FilesystemFacts()
    if all(p.status == "pending" for p in points):
        notes.append("no point has run yet")
    elif not any(p.status == "ok" for p in points):
        reasons = sorted({p.error for p in points if p.status == "failed" and p.error})
        why = f": {reasons[0]}" if reasons else ""
        notes.append(f"no point succeeded{why}")
    if with_facts is None and any(p.status != "pending" for p in points):
        notes.append("nothing was read back from the filesystem (no point got that far)")
    journal = fs_facts.journal_size_bytes
    kind = "journal"
    if journal is None and fs_facts.log_size_bytes is not None:
        journal, kind = fs_facts.log_size_bytes, "log"
    features = fs_facts.features
    if isinstance(features, dict):
        features = [f"{k}={v}" for k, v in features.items()]
    return FilesystemSetup(
        config=config,
        fs_type=fs_type,
        description=fs_spec.description if fs_spec else "",
        mkfs_options=list(fs_spec.mkfs_options) if fs_spec else [],
        mount_options=list(fs_spec.mount_options) if fs_spec else [],
        mkfs_argv=mkfs,
        mount_argv=mount,
        mount_options_effective=facts.mount_options_effective,
        journal_bytes=journal,
        journal_kind=kind,
        block_size_bytes=fs_facts.block_size_bytes,
        features=list(features),
        notes=notes,
    )
