"""Read a report: every extractor, then the links between their facts.

The links are what a reader does without noticing: the dd after `mkfs.xfs`
ran on XFS, "IOPS" in a randwrite report are write IOPS, the figure after
"v6.2:" ran on 6.2. Where the link is a guess, it becomes a question.
"""

from __future__ import annotations

import re
from dataclasses import replace

from fslab.base.errors import UsageError
from fslab.reproduce import figures as figures_mod
from fslab.reproduce import filesystems as filesystems_mod
from fslab.reproduce import hypothesis as hypothesis_mod
from fslab.reproduce import machine as machine_mod
from fslab.reproduce import othertools, robot
from fslab.reproduce import setup as setup_mod
from fslab.reproduce import sweeps as sweeps_mod
from fslab.reproduce import tools as tools_mod
from fslab.reproduce import workload as workload_mod
from fslab.reproduce.facts import (
    DdFact,
    FigureFact,
    FilesystemFact,
    FioFact,
    KernelFact,
    QuestionFact,
    ReportFacts,
    ToolWorkload,
)
from fslab.reproduce.text import ReportText

MAX_REPORT_BYTES = 1024**2
"""A mail, a robot report or a bug with its logs fits; a larger text is refused, so a
hostile or mistaken input cannot hold fslab for minutes."""
MAX_REPORT_LINES = 100_000
"""Lines read from one report: each line passes every extractor (about 15 us each), so a
megabyte of empty lines would hold fslab for seconds; a longer text is refused."""
MAX_NUMBER_DIGITS = 100
"""Digits in one number: longer ones overflow a float (309) or int() (4,300 digits)."""
_LONG_NUMBER_RE = re.compile(rf"\d{{{MAX_NUMBER_DIGITS + 1}}}")
MAX_QUESTIONS = 200
"""Questions listed from one report; a hostile one can raise tens of thousands."""
MAX_FIGURES = 200
"""Figures kept from one report (the first ones): a reply quotes a few."""


def check_report_size(size_bytes: int, source: str) -> None:
    """UsageError (exit 2) for a report over MAX_REPORT_BYTES."""
    if size_bytes > MAX_REPORT_BYTES:
        raise UsageError(
            f"{source}: the report is larger than {MAX_REPORT_BYTES // 1024**2} MiB, the most "
            "fslab reads; paste the part with the commands, the machine and the figures"
        )


def extract_facts(text: str) -> ReportFacts:
    """All facts of a report, each with the line it came from."""
    check_report_size(len(text.encode("utf-8", "surrogatepass")), "report")
    report = ReportText.parse(text)
    if len(report.lines) > MAX_REPORT_LINES:
        raise UsageError(
            f"report: more than {MAX_REPORT_LINES:,} lines, the most fslab reads; paste the "
            "part with the commands, the machine and the figures"
        )
    if huge := _LONG_NUMBER_RE.search(report.joined):
        raise UsageError(
            f"report: line {report.offset_to_line(huge.start())}: a number of more than "
            f"{MAX_NUMBER_DIGITS} digits; fslab reads counts, sizes and figures, none that long"
        )
    facts = ReportFacts()
    title = next(((n, line) for n, line in report.numbered() if line.strip()), None)
    if title:
        facts.title = re.sub(r"^(Subject|Re|Fwd):\s*", "", title[1].strip(), flags=re.I)
        facts.title_line = report.line(title[0])
    facts.fio, dd, facts.other_tools, questions = workload_mod.find_workloads(report)
    facts.filesystems, fs_questions = filesystems_mod.find_filesystems(report)
    facts.kernels = machine_mod.find_kernels(report)
    facts.cpus = machine_mod.find_cpus(report)
    facts.memory = machine_mod.find_memory(report)
    facts.devices, device_questions = machine_mod.find_devices(report)
    images = {fs.device for fs in facts.filesystems if fs.how == "mkfs" and fs.device}
    facts.devices += machine_mod.image_devices(report, images)
    facts.hypotheses = hypothesis_mod.find_hypotheses(report)
    facts.levers = hypothesis_mod.find_levers(report)
    facts.patches = hypothesis_mod.find_patches(report)
    facts.fio = _on_the_made_filesystem_first(facts.fio, facts.filesystems)
    facts.dd = _measured_first([_dd_on_filesystem(run, facts.filesystems) for run in dd])
    facts.questions = [*questions, *fs_questions, *device_questions]
    _experiment(report, facts)
    dd_output_lines = {run.output_line.number for run in facts.dd if run.output_line}
    found = [f for f in figures_mod.find_figures(report) if f.source.number not in dd_output_lines]
    found += [_dd_figure(run) for run in facts.dd if run.seconds]
    facts.figures = _resolved(found[:MAX_FIGURES], facts, report)
    facts.questions += _device_path_questions(facts.filesystems)
    facts.questions = list({(q.item, q.question): q for q in reversed(facts.questions)}.values())[
        ::-1
    ]
    if len(facts.questions) > MAX_QUESTIONS:
        left = len(facts.questions) - MAX_QUESTIONS + 1
        facts.questions[MAX_QUESTIONS - 1 :] = [
            QuestionFact(
                "report",
                f"{left} more questions about this report are not listed (fslab lists "
                f"{MAX_QUESTIONS})",
                "each left out what it asks about",
            )
        ]
    return facts


def _on_the_made_filesystem_first(
    fio: list[FioFact], filesystems: list[FilesystemFact]
) -> list[FioFact]:
    """fio command lines typed after the report makes its filesystem before those shown
    above it (an earlier run quoted from another mail): the session's run is measured."""
    made = [fs.source.number for fs in filesystems if fs.how in ("mkfs", "mount")]
    if not made or not fio or fio[0].form != "command line":
        return fio
    after = [f for f in fio if f.source.number > min(made)]
    if not after or fio[0].source.number > min(made):
        return fio
    return after + [f for f in fio if f.source.number < min(made)]


def _experiment(report: ReportText, facts: ReportFacts) -> None:
    """Other benchmarks, the setup steps, the devices and what the reporter varied."""
    facts.tools = tools_mod.find_tools(report)
    if not (facts.fio or facts.dd or facts.tools):
        timed = tools_mod.find_timed_command(report)
        facts.tools = [timed] if timed else []
        if not (timed or facts.other_tools) and (said := othertools.said_tool(report)):
            facts.other_tools.append(said)
    workloads: list[FioFact | ToolWorkload | DdFact] = [*facts.fio, *facts.tools, *facts.dd]
    if workloads:
        first = min(workloads, key=lambda x: x.source.number)
        text = first.text if isinstance(first, ToolWorkload) and first.tool == "command" else ""
        facts.setup = setup_mod.find_setup(report, facts.filesystems, first.source.number, text)
        prefill = setup_mod.dd_prefill(facts.fio[0], facts.dd) if facts.fio else None
        if prefill is not None and prefill.text not in {x.text for x in facts.setup}:
            facts.setup.insert(0, prefill)
    if (export := robot.lkp_export(report)) is not None:
        facts.questions.append(export)
    facts.layouts = setup_mod.find_layouts(report, facts.filesystems)
    facts.sweeps = sweeps_mod.find_sweeps(
        report, facts.fio, facts.tools, facts.filesystems, facts.kernels, facts.dd
    )
    count = setup_mod.device_count(facts.layouts)
    if count > 1:
        layout = max(facts.layouts, key=lambda x: x.devices)
        facts.questions.append(
            QuestionFact(
                "devices",
                f"the report's filesystem spans {count} devices ({layout.layout}); a spec "
                "builds each point on one scratch device, so this host does not build the "
                "layout",
                "one RAM-backed loop image; options that need the other devices are left out",
                layout.source,
            )
        )


def _measured_first(runs: list[DdFact]) -> list[DdFact]:
    """The dd runs, what the report measures first: reads of a file it wrote with dd (the
    write lays the file out), then other cold reads, then the writes; a read it says hit
    the page cache is left out."""
    written = {r.operand("of") for r in runs if not r.read}
    reads = [r for r in runs if r.read and not r.cached]
    of_written = [r for r in reads if r.operand("if") in written]
    rest = [r for r in reads if r not in of_written]
    return [*of_written, *rest, *(r for r in runs if not r.read)]


def _dd_on_filesystem(run: DdFact, filesystems: list[FilesystemFact]) -> DdFact:
    """The filesystem mounted where dd wrote, else the one last made before it."""
    before = [fs for fs in filesystems if fs.source.number < run.source.number and fs.type]
    target = run.operand("of")
    mounted = [
        fs for fs in before if fs.mountpoint and target.startswith(fs.mountpoint.rstrip("/") + "/")
    ]
    made = [fs for fs in before if fs.how in ("mkfs", "mount")]
    chosen = (mounted or made or before)[-1:]
    return replace(run, filesystem=chosen[0].type) if chosen else run


def _dd_figure(run: DdFact) -> FigureFact:
    assert run.bytes_copied is not None and run.seconds
    line = run.output_line or run.source
    return FigureFact(
        "dd.bw_bytes_s",
        run.bytes_copied / run.seconds,
        "B/s",
        run.rate_text or f"{run.bytes_copied} bytes in {run.seconds} s",
        line,
        context=run.filesystem or "dd",
        filesystem=run.filesystem,
    )


def _resolved(found: list[FigureFact], facts: ReportFacts, report: ReportText) -> list[FigureFact]:
    """Metric directions from the workload, the filesystem and kernel each figure ran on."""
    direction = _fio_direction(facts)
    resolved: list[FigureFact] = []
    for figure in found:
        metric = figure.metric
        if metric == "fio.?.iops":
            metric = f"fio.{direction}.iops" if facts.fio else ""
        elif metric == "?.bw_bytes_s":
            metric = (
                f"fio.{direction}.bw_bytes_s" if facts.fio else "dd.bw_bytes_s" if facts.dd else ""
            )
        line = report.lines[figure.source.number - 1]
        filesystem = figure.filesystem or (filesystems_mod._fs_named(line) or "")
        kernel = _kernel_in(figure.context, facts.kernels)
        resolved.append(replace(figure, metric=metric, filesystem=filesystem, kernel=kernel))
    return _kernels_of_before_after(resolved, facts)


def _fio_direction(facts: ReportFacts) -> str:
    rw = (
        str(facts.fio[0].options.get("rw") or facts.fio[0].options.get("readwrite") or "")
        if facts.fio
        else ""
    )
    if rw in ("rw", "randrw", "readwrite", "trimwrite"):
        return "total"
    return "read" if "read" in rw else "write"


def _kernel_in(context: str, kernels: list[KernelFact]) -> str:
    for kernel in kernels:
        if re.search(r"(?<![\d.])v?" + re.escape(kernel.version) + r"(?![\d])", context):
            return kernel.version
    return ""


def _kernels_of_before_after(figures: list[FigureFact], facts: ReportFacts) -> list[FigureFact]:
    """'dropped from 22K to less than 1K' between two kernels: the older ran 'before'."""
    pairs = [f for f in figures if f.context in ("before", "after")]
    if len(facts.kernels) != 2 or len(pairs) != 2 or any(f.kernel for f in pairs):
        return figures
    older, newer = sorted(facts.kernels, key=lambda k: _version_key(k.version))
    facts.questions.append(
        QuestionFact(
            item="kernels of the figures",
            question=f"the report gives {pairs[0].text} and {pairs[1].text} without saying "
            f"which kernel ran which",
            assumed=f"{pairs[0].text} on {older.version} (the older kernel) and "
            f"{pairs[1].text} on {newer.version}",
            source=pairs[0].source,
        )
    )
    kernel_of = {"before": older.version, "after": newer.version}
    return [replace(f, kernel=kernel_of[f.context]) if f in pairs else f for f in figures]


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def _device_path_questions(filesystems: list[FilesystemFact]) -> list[QuestionFact]:
    devices = sorted({fs.device for fs in filesystems if fs.device.startswith("/dev/")})
    if not devices:
        return []
    first = next(fs for fs in filesystems if fs.device == devices[0])
    return [
        QuestionFact(
            item="device",
            question=f"the report ran on {', '.join(devices)}, a disk of the reporter's machine",
            assumed="a fresh sparse RAM-backed loop image per point (never a named device "
            "unless --target device:PATH --allow-device PATH says so)",
            source=first.source,
        )
    ]
