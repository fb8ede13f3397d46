"""The experiment around the workload: setup steps and the devices under the filesystem.

Setup steps are what the reporter ran between making the filesystem and the
workload (`truncate -s 100G FILE`, a prefill `dd`, `mkdir`, `tune2fs`,
`sysctl vm.*`, `echo ... > /sys/block/*/queue/*`, dropping caches, fio's
`--create_only=1` layout run), and the sysctl values a report lists. The
layout is how many devices the filesystem spans and how they were combined
(an LVM stripe, md RAID, btrfs -d raid0 over four drives, an external log).
All of it is read as text: nothing here is ever run or opened.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from fslab.reproduce import shell
from fslab.reproduce.facts import (
    DdFact,
    FilesystemFact,
    FioFact,
    LayoutFact,
    SetupFact,
    SetupKind,
)
from fslab.reproduce.text import ReportText, prefills, without_prompt

MAX_SETUP_STEPS = 64
"""Setup steps listed from one report."""

_RUN_RE = re.compile(
    r"(?:^|[\s|;(`])(?:sudo\s+|time\s+)*(?:[\w./-]*/)?"
    r"(fio|fs_mark|fsmark|dbench|sysbench|filebench|multitask)(?:\s|$)"
)
_SYSCTL_LIST_RE = re.compile(r"^\s*((?:vm|kernel|fs)\.[\w.]+\s*=\s*\S+)")
_SEGMENT_RE = re.compile(r";|&&|\|\|")  # no \s* around it: linear on long blanks
_STEP_RES: tuple[tuple[SetupKind, re.Pattern[str]], ...] = (
    ("truncate", re.compile(r"^truncate\s+-")),
    ("fallocate", re.compile(r"^fallocate\s+-")),
    ("dd", re.compile(r"^dd\s+(?:\w+=\S+\s*)*of=(?!/dev/)\S+")),
    ("mkdir", re.compile(r"^mkdir\s+(?:-p\s+)?[\w./${}-]+$")),
    ("chattr", re.compile(r"^chattr\s+\+C\s+[\w./${}-]+$")),  # btrfs No_COW
    ("touch", re.compile(r"^touch\s+[\w./${}-]+$")),
    ("tune2fs", re.compile(r"^tune2fs\s+-")),
    ("sysctl", re.compile(r"^sysctl\s+(?:-w\s+)?(?:vm|kernel|fs)\.[\w.]+=\S+")),
    (
        "drop caches",
        re.compile(r"^echo\s+\S+\s*(?:>|\|\s*(?:sudo\s+)?tee)\s*/proc/sys/vm/drop_caches"),
    ),
    ("procfs", re.compile(r"^echo\s+.+?(?:>|\|\s*(?:sudo\s+)?tee)\s*/proc/sys/[\w/]+$")),
    ("sysfs", re.compile(r"^echo\s+.+?(?:>|\|\s*(?:sudo\s+)?tee)\s*/sys/(?:block|fs)/[\w/*.-]+$")),
    ("file", re.compile(r"^echo\s+.+?>\s*[\w.-]+$")),
    ("sync", re.compile(r"^sync$")),
    ("fstrim", re.compile(r"^fstrim\s+(?:-\w+\s+)*/\S*$")),
)
_NUMBER_WORDS = {
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "eight": 8,
    "ten": 10,
    "twelve": 12,
}
_COUNT = r"(\d{1,3}|" + "|".join(_NUMBER_WORDS) + r")"
_PROSE_LAYOUT_RE = re.compile(
    r"\b((?:LVM|md|mdadm|btrfs)\s+)?(raid\s?\d+(?:c[34])?|stripe[sd]?)"
    r"(?:\s+array(?:\s+/dev/\S+)?)?\s+(?:over|of|across|from|with)\s+"
    + _COUNT
    + r"\s+(?:[\w.-]+\s+){0,2}?(drives|disks|devices|ssds|hdds|ramdisks|nvmes?|luns)\b",
    re.I,
)
_FI_DF_DATA_RE = re.compile(r"^\s*Data,\s*(RAID1C3|RAID1C4|RAID10|RAID1|RAID0|RAID5|RAID6):", re.I)
# the fewest devices each btrfs data profile can be made on
_PROFILE_DEVICES = {
    "raid0": 2,
    "raid1": 2,
    "raid1c3": 3,
    "raid1c4": 4,
    "raid10": 4,
    "raid5": 2,
    "raid6": 3,
}
_MDADM_CREATE_RE = re.compile(
    r"\bmdadm\s+(?:--create|-C)\b(?=.*?(?:-n\s*|--raid-devices[= ])(?P<n>\d+))"
    r"(?=.*?(?:-l\s*|--level[= ])(?P<level>(?:raid)?\d+))"
)
_MDSTAT_RE = re.compile(
    r"^\s*(md\w+)\s*:\s*active\s+(?:\(\w+\)\s+)?(raid\d+|linear)\s+"
    r"((?:[\w-]+\[\d+\](?:\([A-Z]\))?\s*)+)$"
)
# "a two-device RAID1 filesystem", "4-disk raid10": the count before the level
_COUNTED_LAYOUT_RE = re.compile(
    _COUNT.replace("(", "(?P<count>", 1)
    + r"[- ](?:device|disk|drive|ssd|nvme)s?\s+(?:btrfs\s+|md\s+)?(?P<level>raid[\s-]?\d+)\b",
    re.I,
)
_DISK_PARAM_RE = re.compile(r"^\s*disk:\s*(?:(\d+)(BRD)_\S+|(.*?)\s*\*\s*(\d+))\s*$")
_MD_PARAM_RE = re.compile(r"^\s*md:\s*(RAID\d+)\s*$", re.I)
_LVM_LINE_RE = re.compile(r"^\s*LVM:\s*(raid\d+|striped?)\b(.*)$", re.I)
_BTRFS_PROFILE_RE = re.compile(r"^-[dm]$|^--(?:data|metadata)$")


_BEFORE_DD_RE = re.compile(
    r"\bbefore\b[^.()]{0,60}?\bdd\s*\(\s*(\w+=[^\s()]+(?:\s+\w+=[^\s()]+)*)\s*\)", re.I
)


def find_setup(
    report: ReportText,
    filesystems: list[FilesystemFact],
    workload_line: int,
    workload_text: str = "",
) -> list[SetupFact]:
    """Steps between the last mkfs or mount before the workload runs and the run itself;
    sysctl values the report lists, wherever they are."""
    run_line = _run_line(report, filesystems, workload_line)
    made = [fs.source.number for fs in filesystems if fs.how in ("mkfs", "mount")]
    start = max([n for n in made if n < run_line], default=0)
    mountpoints = {fs.mountpoint.rstrip("/") for fs in filesystems if fs.mountpoint}
    steps: list[SetupFact] = []
    for number, raw in report.numbered():
        listed = _SYSCTL_LIST_RE.match(raw)
        if listed:
            steps.append(SetupFact("sysctl", listed.group(1).strip(), report.line(number)))
            continue
        if not start < number <= run_line:
            continue
        line = without_prompt(raw)
        if number == run_line:
            at = line.find(workload_text) if workload_text else -1
            run = _RUN_RE.search(line)
            line = line[:at] if at >= 0 else line[: run.start()] if run else ""
        joined = _joined(report, number, line) if re.search(r"\bfio\b", line) else ""
        if joined and (
            _is_layout_fio(joined) or (prefills(report, number) and _RUN_RE.search(line))
        ):
            command = re.search(r"(?:sudo\s+)?(?:[\w./-]*/)?fio\s+-", joined)
            text = joined[command.start() :] if command else joined  # not "1. Create ...: fio"
            steps.append(SetupFact("fio layout", text, report.line(number)))
            continue
        line = shell.without_comment(line)  # `chattr +C file.dat # turns off COW`
        for segment in (part.strip() for part in _SEGMENT_RE.split(line)):
            kind = _step_kind(segment)
            if kind == "mkdir" and segment.split()[-1].rstrip("/") in mountpoints:
                continue
            if kind is not None:
                steps.append(SetupFact(kind, segment.strip(), report.line(number)))
    steps += [step for step in _said_before(report) if step.text not in {x.text for x in steps}]
    return steps[:MAX_SETUP_STEPS]


def dd_prefill(fio: FioFact, runs: list[DdFact]) -> SetupFact | None:
    """The last dd before a fio job that writes the job's own file (`dd ...
    of=/mnt/testfile`, then `fio --filename=/mnt/testfile`): the file's prefill, a setup
    step, though no comment says so."""
    name = str(dict(fio.written).get("filename") or "")
    if not name or name.startswith("/dev/"):
        return None
    for run in reversed(runs):
        target = run.operand("of")
        if run.source.number < fio.source.number and not run.read and target == name:
            return SetupFact("dd", run.command, run.source)
    return None


def _said_before(report: ReportText) -> Iterator[SetupFact]:
    """A step the prose says runs first, its operands in parentheses: "Before doing fio,
    use dd (if=/dev/zero of=/mnt/testfile bs=1M count=4096) to warm-up the file"."""
    for number, line, own in report.wrapped():
        match = _BEFORE_DD_RE.search(line)
        if match and match.start() < own:
            step = "dd " + " ".join(match.group(1).split())
            if _step_kind(step) == "dd":
                yield SetupFact("dd", step, report.line(number))


def _run_line(report: ReportText, filesystems: list[FilesystemFact], workload_line: int) -> int:
    """Where the workload runs: its own line when a filesystem was made before it (a
    report that makes the next filesystem after it runs it on the first), else the first
    command after the last mkfs or mount that runs a benchmark (a job file pasted above
    the session runs where `fio JOBFILE` is typed)."""
    made = [fs.source.number for fs in filesystems if fs.how in ("mkfs", "mount")]
    if not made or workload_line > min(made):
        return workload_line
    for number in range(max(made) + 1, len(report.lines) + 1):
        line = without_prompt(report.lines[number - 1])
        if _typed_run(line) and not _is_layout_fio(_joined(report, number, line)):
            return number
    return workload_line


def _typed_run(line: str) -> bool:
    """A benchmark typed as a command (`fio job.fio`, `... | fio -`, `do dbench 8`), not
    one a sentence names ("2048 fio threads doing 16k writes")."""
    run = _RUN_RE.search(line)
    if run is None:
        return False
    before = line[: run.start() + (run.group(0)[0] in " \t|;(`")].rstrip()
    return not before or before[-1] in "|;(`&" or before.endswith(("do", "then"))


def _is_layout_fio(line: str) -> bool:
    return bool(re.search(r"\bfio\b", line) and re.search(r"-create_only[= ]1\b", line))


def _joined(report: ReportText, number: int, line: str) -> str:
    """The command through `\\` continuations and the `--option` lines a mailer wrapped."""
    parts = [line.rstrip()]
    index = number
    while index < len(report.lines):
        following = report.lines[index].strip()
        if parts[-1].endswith("\\"):
            parts[-1] = parts[-1][:-1].rstrip()
        elif not following.startswith("--"):
            break
        parts.append(following)
        index += 1
    return " ".join(parts)


def _step_kind(segment: str) -> SetupKind | None:
    text = re.sub(r"^sudo\s+", "", segment.strip())
    if "scaling_governor" in text or re.search(r">\s*\"?\$", text):
        return None  # the CPU governor (the machine, noted elsewhere); a computed path
    for kind, pattern in _STEP_RES:
        if pattern.search(text):
            return kind
    return None


# --- devices -------------------------------------------------------------------------------


_DMSETUP_STRIPED_RE = re.compile(r"^\S+:\s+\d+\s+\d+\s+striped\s+(\d+)\s+\d+\s+\d+:\d+")


def find_layouts(report: ReportText, filesystems: list[FilesystemFact]) -> list[LayoutFact]:
    """How many devices the reporter's filesystem spans, and how, from every line that says."""
    layouts: list[LayoutFact] = []
    md = next((m.group(1) for _, line in report.numbered() if (m := _MD_PARAM_RE.match(line))), "")
    lvm = ""
    for number, line in report.numbered():
        if lvm_match := _LVM_LINE_RE.match(line):
            lvm = f"LVM {lvm_match.group(1)}{lvm_match.group(2).rstrip('.')}"
        if table := _DMSETUP_STRIPED_RE.search(line):  # `dmsetup table`: "striped 4 128 ..."
            count = int(table.group(1))
            layouts.append(
                LayoutFact(
                    count, f"LVM stripe over {count} devices", line.strip(), report.line(number)
                )
            )
        if profile := _FI_DF_DATA_RE.match(line):  # `btrfs fi df`: "Data, RAID1: total=..."
            level = profile.group(1).lower()
            count = _PROFILE_DEVICES[level]
            layout = f"btrfs {level} (btrfs fi df) over at least {count} devices"
            layouts.append(LayoutFact(count, layout, line.strip(), report.line(number)))
        if created := _MDADM_CREATE_RE.search(line):  # mdadm --create /dev/md10 -n 3 -l 5
            count = int(created.group("n"))
            layout = f"md raid{created.group('level').removeprefix('raid')} over {count} devices"
            layouts.append(LayoutFact(count, layout, line.strip(), report.line(number)))
        if mdstat := _MDSTAT_RE.match(line):  # /proc/mdstat: "md126 : active raid10 sda1[3] ..."
            count = len(re.findall(r"\[\d+\]", mdstat.group(3)))
            layout = f"md {mdstat.group(2)} over {count} devices"
            layouts.append(LayoutFact(count, layout, line.strip(), report.line(number)))
        disk = _DISK_PARAM_RE.match(line)
        if disk and disk.group(2):
            count = int(disk.group(1))
            what = f"{count} brd ramdisks" if count > 1 else "one brd ramdisk"
            layout = f"md {md} over {what}" if md and count > 1 else what
            layouts.append(LayoutFact(count, layout, line.strip(), report.line(number)))
        elif disk:
            count = int(disk.group(4))
            layouts.append(
                LayoutFact(count, f"{count} x {disk.group(3)}", line.strip(), report.line(number))
            )
        if counted := _COUNTED_LAYOUT_RE.search(line):
            count = _count(counted.group("count"))
            layout = f"{counted.group('level')} over {count} devices"
            layouts.append(LayoutFact(count, layout, counted.group(0), report.line(number)))
        following = report.lines[number] if number < len(report.lines) else ""
        wrapped = f"{line} {following.strip()}"  # a mail wraps "RAID5 / array ... from 4 SSDs"
        for match in _PROSE_LAYOUT_RE.finditer(wrapped):
            if match.start() >= len(line):
                continue
            count = _count(match.group(3))
            kind = f"{(match.group(1) or '').strip()} {match.group(2)}".strip()
            layouts.append(
                LayoutFact(
                    count,
                    f"{kind} over {count} {match.group(4)}",
                    match.group(0),
                    report.line(number),
                )
            )
    for fs in filesystems:
        layouts.extend(_mkfs_layout(fs))
    if lvm:
        layouts = [
            LayoutFact(
                x.devices,
                f"{lvm} over {x.layout}" if "LVM" not in x.layout else x.layout,
                x.text,
                x.source,
            )
            for x in layouts
        ]
    return layouts


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBER_WORDS[word.lower()]


def _mkfs_layout(fs: FilesystemFact) -> list[LayoutFact]:
    """An external log or realtime device, a btrfs RAID profile, several devices named."""
    if fs.how != "mkfs":
        return []
    found: list[LayoutFact] = []
    options = list(fs.mkfs_options)
    external = [o for o in options if re.search(r"\b(?:logdev|rtdev)=/", o)]
    if external:
        found.append(
            LayoutFact(
                1 + len(external),
                "data device and "
                + ", ".join(
                    "an external log" if "logdev" in o else "a realtime device" for o in external
                ),
                " ".join(options),
                fs.source,
            )
        )
    profiles = [
        f"{options[i]} {options[i + 1]}"
        for i in range(len(options) - 1)
        if _BTRFS_PROFILE_RE.match(options[i]) and options[i + 1].lower().startswith("raid")
    ]
    devices = [w for w in fs.extra_devices] if fs.extra_devices else []
    if profiles or devices:
        count = 1 + len(devices)
        found.append(
            LayoutFact(count, f"btrfs {' '.join(profiles)}".strip(), " ".join(options), fs.source)
        )
    return found


def device_count(layouts: list[LayoutFact]) -> int:
    """The devices under the reporter's filesystem: the largest count any line gives."""
    return max((x.devices for x in layouts), default=1)
