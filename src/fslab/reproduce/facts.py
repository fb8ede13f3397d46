"""What a performance report says, as typed facts, each with the line it came from.

Extraction (one module per kind of fact) produces these; the spec writer reads
them. Nothing here runs anything or knows about the host.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from fslab.base.units import parse_size_bytes
from fslab.spec.reported import NameKind, Qualifier
from fslab.workload.fio.options import FioOptions

FioForm = Literal["command line", "braces", "job file", "lkp parameters"]


@dataclass(frozen=True)
class Line:
    """Where a fact came from: a 1-based line number and that line's text."""

    number: int
    text: str


@dataclass(frozen=True)
class FioFact:
    """A fio job the report gives, imported by fslab's own fio parser."""

    options: FioOptions
    form: FioForm
    text: str  # the workload as written, wrappers and continuations included
    source: Line
    notes: tuple[str, ...] = ()  # what the import changed, said to the user
    sweeps: tuple[tuple[str, tuple[str, ...]], ...] = ()  # values the report ran one by one
    host_cpus: tuple[str, ...] = ()  # options the report set to its machine's CPU count
    written: tuple[tuple[str, str | None], ...] = ()  # the options as the reporter wrote them


@dataclass(frozen=True)
class DdFact:
    """A dd the report ran, with what dd printed when the transcript shows it."""

    operands: tuple[tuple[str, str], ...]  # as given: (("if", "/dev/zero"), ("bs", "1M"), ...)
    source: Line
    bytes_copied: int | None = None
    seconds: float | None = None
    rate_text: str = ""  # dd's own rounded rate, "602 kB/s"
    output_line: Line | None = None
    filesystem: str = ""  # the filesystem type the report had made where dd wrote
    read: bool = False  # dd if=FILE of=/dev/null: a read of a file on the filesystem
    cached: bool = False  # the report says this run read from the page cache
    synced: bool = False  # a (timed) sync follows the dd: the reporter's figure includes it

    def operand(self, name: str, default: str = "") -> str:
        return dict(self.operands).get(name, default)

    @property
    def command(self) -> str:
        """The dd as the report gave its operands: `dd if=/dev/zero of=f bs=1M count=128`."""
        return "dd " + " ".join(f"{k}={v}" for k, v in self.operands)

    def written_bytes(self) -> int:
        """bs x count as the report gives them (0 when either is not a plain size)."""
        try:
            return parse_size_bytes(self.operand("bs", "512")) * int(self.operand("count", "1"))
        except ValueError:
            return 0


@dataclass(frozen=True)
class OtherToolFact:
    """A workload fslab recognises but cannot run (fs_mark, a job file not pasted)."""

    tool: str
    why: str
    source: Line


ToolName = Literal[
    "fio",
    "dd",
    "fs_mark",
    "sysbench",
    "dbench",
    "aim7",
    "reaim",
    "filebench",
    "postmark",
    "compilebench",
    "stress-ng",
    "fxmark",
    "command",
]

# the tools no machine fslab runs on has, and why
NOT_RUNNABLE = {
    "aim7": "aim7 (and its multitask driver) is not packaged for the distributions fslab "
    "runs on; not runnable here",
    "reaim": "reaim (the AIM7 workloads re-implemented) is not packaged for the "
    "distributions fslab runs on; not runnable here",
    "filebench": "filebench runs its own workload language (.f files) that fslab cannot "
    "check; not runnable here",
    "compilebench": "compilebench is not packaged for the distributions fslab runs on; not "
    "runnable here",
    "fxmark": "FxMark (a multicore scalability suite built from its own sources) is not "
    "packaged for the distributions fslab runs on; not runnable here",
}


@dataclass(frozen=True)
class ToolWorkload:
    """A benchmark the report runs, as the reporter wrote it: the tool, its options in the
    tool's own spelling (fs_mark and dbench with their dashes, sysbench and fio without),
    the steps it runs (sysbench's prepare/run/cleanup) and the line it came from.

    `runnable` is whether the tool can run on a machine like this at all (aim7 is not
    packaged anywhere fslab runs); whether fslab's spec has a workload kind for it is the
    spec writer's question (specwrite), not the report's."""

    tool: ToolName
    options: tuple[tuple[str, str | None], ...]
    text: str  # the command (or parameter block) as written
    source: Line
    runnable: bool = True
    why: str = ""  # why it cannot run here, when it cannot
    steps: tuple[str, ...] = ()  # sysbench prepare/run/cleanup, as given
    sweeps: tuple[tuple[str, tuple[str, ...]], ...] = ()  # alternatives the command spells out

    def option(self, name: str, default: str = "") -> str:
        value = dict(self.options).get(name)
        return default if value is None else value


SetupKind = Literal[
    "truncate",
    "fallocate",
    "dd",
    "mkdir",
    "tune2fs",
    "sysctl",
    "sysfs",
    "procfs",
    "drop caches",
    "sync",
    "fio layout",
    "file",
    "fstrim",
    "chattr",
    "touch",
]


@dataclass(frozen=True)
class SetupFact:
    """A step the reporter ran between making the filesystem and the workload. Read as
    text, never run: fslab repeats what it can express in a spec and asks about the rest."""

    kind: SetupKind
    text: str  # the command as written (continuations joined)
    source: Line


@dataclass(frozen=True)
class LayoutFact:
    """The devices under the reporter's filesystem: how many, and how they were combined
    (an LVM stripe, md RAID, btrfs -d raid0, an external log)."""

    devices: int
    layout: str
    text: str
    source: Line


@dataclass(frozen=True)
class SweepFact:
    """What the reporter changed between runs: an option's values, mkfs or mount options,
    kernels. `axis` is the changed option's name as written ("bs", "clients", "mkfs -n
    parent", "mount_options", "kernel")."""

    axis: str
    values: tuple[str, ...]
    why: str  # how the report shows it was varied
    source: Line


FilesystemHow = Literal["mkfs", "mount", "prose", "parameters"]  # where the fact was read


@dataclass(frozen=True)
class FilesystemFact:
    """A filesystem the report made, mounted or compared."""

    type: str  # ext4, xfs, btrfs
    source: Line
    how: FilesystemHow
    device: str = ""
    mkfs_options: tuple[str, ...] = ()
    mount_options: tuple[str, ...] = ()
    mountpoint: str = ""
    extra_devices: tuple[str, ...] = ()  # more devices one mkfs spans (mkfs.btrfs A B C D)


@dataclass(frozen=True)
class KernelFact:
    version: str
    source: Line


@dataclass(frozen=True)
class CpuFact:
    count: int
    text: str
    source: Line


@dataclass(frozen=True)
class MemoryFact:
    size_bytes: int
    text: str
    source: Line


@dataclass(frozen=True)
class DeviceFact:
    """The device the report ran on: its size, or a limit it was provisioned with."""

    text: str
    source: Line
    size_bytes: int | None = None
    iops_limit: float | None = None
    bw_limit_bytes_s: float | None = None


@dataclass(frozen=True)
class FigureFact:
    """A figure the reporter measured."""

    metric: str  # fslab metric name where one matches, else ""
    value: float  # in the metric's unit
    unit: str  # "IO/s", "B/s", "share", "%"
    text: str
    source: Line
    qualifier: Qualifier = ""
    context: str = ""  # what it was measured on, as the report says ("v6.2", "lock")
    filesystem: str = ""
    kernel: str = ""


@dataclass(frozen=True)
class NameFact:
    kind: NameKind
    name: str


@dataclass(frozen=True)
class HypothesisFact:
    """The reporter's explanation and the names it blames."""

    statement: str
    source: Line
    names: tuple[NameFact, ...] = ()


Lever = Literal["bigger-journal", "free-space", "cpu-count"]  # what fslab can vary to test it


@dataclass(frozen=True)
class LeverFact:
    """Something the report names that fslab can vary to test it (a remedy, a knob)."""

    lever: Lever
    text: str
    source: Line


@dataclass(frozen=True)
class PatchFact:
    """A kernel patch the report carries (fslab cannot apply it on the host)."""

    files: tuple[str, ...]
    subject: str
    source: Line


@dataclass(frozen=True)
class QuestionFact:
    """Something unknown or ambiguous, and what fslab assumed instead of guessing silently."""

    item: str
    question: str
    assumed: str
    source: Line | None = None


@dataclass
class ReportFacts:
    """Everything read from one report."""

    title: str = ""
    title_line: Line | None = None
    fio: list[FioFact] = field(default_factory=list)
    dd: list[DdFact] = field(default_factory=list)
    other_tools: list[OtherToolFact] = field(default_factory=list)
    tools: list[ToolWorkload] = field(default_factory=list)  # benchmarks other than fio and dd
    setup: list[SetupFact] = field(default_factory=list)
    layouts: list[LayoutFact] = field(default_factory=list)
    sweeps: list[SweepFact] = field(default_factory=list)
    filesystems: list[FilesystemFact] = field(default_factory=list)
    kernels: list[KernelFact] = field(default_factory=list)
    cpus: list[CpuFact] = field(default_factory=list)
    memory: list[MemoryFact] = field(default_factory=list)
    devices: list[DeviceFact] = field(default_factory=list)
    figures: list[FigureFact] = field(default_factory=list)
    hypotheses: list[HypothesisFact] = field(default_factory=list)
    levers: list[LeverFact] = field(default_factory=list)
    patches: list[PatchFact] = field(default_factory=list)
    questions: list[QuestionFact] = field(default_factory=list)

    @property
    def has_workload(self) -> bool:
        return bool(self.fio or self.dd)

    @property
    def reporter_cpus(self) -> CpuFact | None:
        """The reporter's machine's CPU count: the first named (a robot's side tables of
        other machines, and second machines in a mail, follow it)."""
        return self.cpus[0] if self.cpus else None

    def filesystem_types(self) -> list[str]:
        """The filesystems the report names: the one its commands made and mounted first
        (the reporter's), then the others in order of first mention."""
        seen: list[str] = []
        made = [fs for fs in self.filesystems if fs.how in ("mkfs", "mount") and fs.type] or [
            fs for fs in self.filesystems if fs.how == "parameters"
        ]
        for fs in [*made[:1], *self.filesystems]:
            if fs.type not in seen:
                seen.append(fs.type)
        return seen
