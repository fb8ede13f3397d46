"""The shell recipe that reproduces one point by hand, and the fslab command that reruns all.

A kernel developer who doubts a figure should be able to paste the commands
and watch it happen. The recipe is the commands the point really ran, as the
store recorded them, with the steps fslab does itself in Python (the sparse
image, the pre-fill, the blkio throttle) written out as their shell
equivalents where they happened.
"""

from __future__ import annotations

from pathlib import Path

from fslab.analyze.campaign.dataset import CampaignData
from fslab.base.format import format_bytes
from fslab.report.evidence import point_ref
from fslab.report.setup_facts import applied_limits
from fslab.report.tree import PointRef, Reproduce, Step
from fslab.store.db import PointRow, Store
from fslab.store.facts import CampaignOverrides, DeviceFacts
from fslab.target.limits import throttle_file


def build_reproduce(store: Store, data: CampaignData, worst: PointRef | None) -> Reproduce:
    """The worst point's commands as it ran them; else the first point that ran any."""
    if worst is not None:
        point = data.point(worst.point_id)
        why = "the worst point of the campaign"
    else:
        ran = [p for p in data.points if store.commands(p.id)]
        if not ran:
            return Reproduce(None, "", [], ["no point ran a command yet"])
        point = ran[0]
        why = f"no point succeeded; the first that ran ({point.status})"
    records = store.command_records(point.id)
    steps: list[Step] = _image_steps(data, [argv for argv, _, _ in records])
    mountpoint = None
    for argv, rc, _ in records:
        steps.append(Step(None, argv, rc))
        if argv and argv[0] == "mount":
            mountpoint = argv[-1]
            steps += _fill_steps(point, mountpoint) + _limit_steps(point)
        if argv and argv[0] == "dd":
            iterations = data.metrics.get(point.id, {}).get("dd.iterations")
            if iterations and iterations > 1:
                steps.append(
                    Step(
                        f"fslab ran this dd {iterations:.0f} times, deleting the file between "
                        "runs (sustained mode), and reports total bytes over dd's own times",
                        None,
                    )
                )
    notes = []
    if not records:
        notes.append("this point stored no commands")
    return Reproduce(point_ref(data, point), why, steps, notes)


def _image_steps(data: CampaignData, commands: list[list[str]]) -> list[Step]:
    """fslab creates the loop image itself (no command is stored): the shell equivalent.

    Each image is a file `losetup --find --show` attached (mkfs ran on them just
    before; several under one btrfs with target.devices).
    """
    device = data.campaign.device or DeviceFacts()
    size = device.size_bytes
    attached = [a for a in commands if a[:1] == ["losetup"] and "--find" in a]
    if not attached or not size or device.kind not in ("ram", "file"):
        return []
    what = "image" if len(attached) == 1 else f"{len(attached)} images"
    return [
        Step(
            f"fslab created the sparse {format_bytes(size)} {what} itself; by hand:"
            if index == 0
            else None,
            ["truncate", "-s", str(size), attach[-1]],
        )
        for index, attach in enumerate(attached)
    ]


def _fill_steps(point: PointRow, mountpoint: str) -> list[Step]:
    fill = point.facts.fill
    if fill is None or not fill.bytes_filled:
        return []
    size = fill.bytes_filled
    return [
        Step(
            f"fslab then pre-filled the filesystem with fallocate(2), leaving "
            f"{format_bytes(fill.free_bytes_after or 0)} free; one file does the same:",
            ["fallocate", "-l", str(size), f"{mountpoint}/fslab-fill-0"],
        )
    ]


def _limit_steps(point: PointRow) -> list[Step]:
    """target.limits as set before the workload (fslab writes the throttle files itself)."""
    applied = point.facts.device_limits
    if applied is None or not applied.blkio_root:
        return []
    limits = applied_limits(applied)
    comment = (
        f"fslab then capped the device at {limits.describe()} for the workload, at the "
        "root blkio cgroup (the same with 0 clears it afterwards):"
    )
    return [
        Step(
            comment if i == 0 else None,
            [
                "sh",
                "-c",
                'echo "$0" > "$1"',
                f"{applied.devno} {value}",
                str(throttle_file(kind, Path(applied.blkio_root))),
            ],
        )
        for i, (kind, value) in enumerate(limits.items())
    ]


def rerun_argv(overrides: CampaignOverrides, report_source: str = "") -> list[str]:
    """The fslab command that runs the campaign's experiment again, from its stored
    overrides: `fslab reproduce REPORT --run` when it reproduces a report, else
    `fslab run SPEC`, with its --quick and --set."""
    if report_source and report_source != "-":
        argv = ["fslab", "reproduce", report_source, "--run"]
    else:
        argv = ["fslab", "run", overrides.source or "SPEC"]
    if overrides.quick:
        argv.append("--quick")
    for item in overrides.set:
        argv += ["--set", item]
    return argv
