"""From a report's facts to a spec that reproduces it here, every choice stated in a comment.

The spec is written as TOML with comments (tomlkit) and validated by fslab's
own spec model before it is shown, so what `fslab reproduce` prints is what
`fslab run` accepts. Configurations: the reporter's setup, then the obvious
counterpart (another filesystem the report names, else the filesystem's
defaults when the reporter gave options), then what the report's own remedy
or hypothesis names (a bigger journal; less free space).
"""

from __future__ import annotations

import re
import textwrap
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import Table

from fslab.base.errors import UsageError
from fslab.base.units import parse_size_bytes
from fslab.guest.debian import OFFERED_SERIES
from fslab.measure.plan import fio_seconds
from fslab.reproduce import pending
from fslab.reproduce.facts import DdFact, FioFact, QuestionFact, ReportFacts
from fslab.reproduce.scale import (
    DEFAULT_RAMP_S,
    QUICK_RAMP_S,
    QUICK_REPEAT,
    QUICK_RUNTIME_S,
    HostShape,
    file_budget_bytes,
    fio_size_text,
    human_bytes,
    leave_free_bytes,
    numjobs_ladder,
    per_job_size,
    quick_numjobs,
    runtime_s,
    target_size_bytes,
)
from fslab.reproduce.text import without_prompt
from fslab.spec.load import validate_spec
from fslab.spec.model import MAX_NUMJOBS, Spec
from fslab.spec.reported import (
    ReportedFact,
    ReportedFigure,
    ReportedHypothesis,
    ReportedName,
    ReportedQuestion,
    ReportedSpec,
)

LAZY_INIT = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
LAZY_INIT_WHY = (
    "fslab adds -E lazy_itable_init=0,lazy_journal_init=0 so ext4's background "
    "zeroing does not run during the measurement"
)
BIG_JOURNAL_MIB = 1024
LOOKED_FOR = (
    "a fio command line (fio --name=... --rw=...), fio options in braces ({ --name=... }), "
    "a fio job file (a section line, then option=value lines), lkp-tests fio parameters "
    "(testcase: fio-basic with rw:, bs:), or dd writing a file (dd if=/dev/zero of=FILE bs= count=)"
)


@dataclass
class Config:
    label: str
    type: str
    description: str
    mkfs_options: list[str] = field(default_factory=list)
    mount_options: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Reproduction:
    """The spec, its commented TOML, and what the user must be told."""

    spec: Spec
    toml: str
    warnings: list[str]
    questions: list[QuestionFact]


def build_spec(
    facts: ReportFacts, *, source_name: str, host: HostShape, guests: bool = True
) -> Reproduction:
    """The spec reproducing the report here; UsageError (exit 2) when it has no workload.

    With `guests`, the report's kernel and CPU count run in a qemu guest where
    fslab can have them (pending.vm_section); without, on this host."""
    if not facts.has_workload:
        raise UsageError(_no_workload_message(facts, source_name))
    questions = list(facts.questions)
    builder = _Builder(facts, host, questions, guests=guests)
    doc = builder.document(source_name)
    text = tomlkit.dumps(doc)
    spec = validate_spec(tomllib.loads(text), f"the spec written for {source_name}")
    return Reproduction(spec, text, builder.warnings, questions)


def _no_workload_message(facts: ReportFacts, source_name: str) -> str:
    lines = [f"{source_name}: no workload fslab can run was found. fslab looked for {LOOKED_FOR}."]
    for other in facts.other_tools:
        lines.append(f"  line {other.source.number}: {other.tool}: {other.why}")
    for question in facts.questions:
        if question.item == "fio workload" and question.source:
            lines.append(f"  line {question.source.number}: {question.question}")
    lines.append("Paste the workload's command (or job file) into the report text and run again.")
    return "\n".join(lines)


def spec_name(source_name: str, title: str) -> str:
    stem = Path(source_name).stem if source_name not in ("-", "") else title
    slug = re.sub(r"[^A-Za-z0-9_.+-]+", "-", stem).strip("-.")[:64]
    return slug or "reproduce"


DD_MAX_BS = 1024**3  # spec.DdWorkload's bounds
DD_MAX_COUNT = 10_000_000


class _Builder:
    """Builds the TOML document section by section, collecting warnings and questions."""

    def __init__(
        self, facts: ReportFacts, host: HostShape, questions: list[QuestionFact], *, guests: bool
    ) -> None:
        self.guests = guests
        self.facts = facts
        self.host = host
        self.questions = questions
        self.warnings: list[str] = []
        self.unreproduced: list[ReportedFact] = []
        self.reported_point: dict[str, int | str] = {}
        self.limits = pending.target_limits(facts)

    # -- the whole document ---------------------------------------------------------------

    def document(self, source_name: str) -> tomlkit.TOMLDocument:
        facts = self.facts
        doc = tomlkit.document()
        size = self._device_size()
        configs = self._configurations()
        workload, sweep, run, quick_set = self._workload(size.value, configs)
        self._unreproducible()
        name = spec_name(source_name, facts.title)
        for line in self._header(source_name):
            doc.add(tomlkit.comment(line))
        doc.add(tomlkit.nl())
        doc["name"] = name
        doc["description"] = f"reproduces: {facts.title}"[:200]
        target = tomlkit.table()
        target["kind"] = "ram"
        _add(target, "size", human_bytes(int(size.value)), size.comment)
        self._target_limits(target)
        doc["target"] = target
        filesystems = tomlkit.aot()
        for config in configs:
            filesystems.append(self._config_table(config))
        doc["filesystems"] = filesystems
        doc["workload"] = workload
        if sweep.value:
            doc["sweep"] = sweep
        vm = self._vm()
        if vm is not None:
            doc["vm"] = vm
        doc["run"] = run
        doc["quick"] = self._quick(configs, quick_set)
        doc["reported"] = self._reported(source_name, configs)
        return doc

    def _header(self, source_name: str) -> list[str]:
        lines = [
            *_wrap(
                f'Written by `fslab reproduce {source_name}` from the report "{self.facts.title}".'
            ),
            "Each choice below names the report line it came from, and each scaling says why.",
            "Nothing has run yet: `fslab run THIS.toml` (or `fslab reproduce REPORT --run`).",
        ]
        if self.questions:
            lines += ["", "Questions (what the report leaves open, and what fslab assumed):"]
            for q in self.questions:
                where = f"line {q.source.number}: " if q.source else ""
                lines += _wrap(f"- {where}{q.question}; assumed: {q.assumed}")
        if self.warnings:
            lines += ["", "Not reproducible on this host (kept under [reported]):"]
            for warning in self.warnings:
                lines += _wrap(f"- {warning}")
        return lines

    # -- target and configurations --------------------------------------------------------

    def _device_size(self):
        sizes = [d for d in self.facts.devices if d.size_bytes]
        reported = sizes[0].size_bytes if sizes else None
        said = sizes[0].text if sizes else ""
        scaled = target_size_bytes(reported, self.host, dd=not self.facts.fio, said=said)
        if sizes:
            scaled = type(scaled)(scaled.value, f"line {sizes[0].source.number}: {scaled.comment}")
        return scaled

    def _target_limits(self, target: Table) -> None:
        """[target.limits]: the report's device limits, the line each came from above it."""
        limits = self.limits.limits
        if limits is None:
            return
        for device in self.limits.used:
            for line in _wrap(
                f'line {device.source.number}: the device limit "{device.text}" (read as '
                f"{pending.limit_text(device)}) caps reads and writes alike; fslab applies it "
                "with the blkio throttle on each point's scratch device"
            ):
                target.add(tomlkit.comment(line))
        table = tomlkit.table()
        for key, value in limits.model_dump(exclude_none=True).items():
            table[key] = value
        target["limits"] = table

    def _configurations(self) -> list[Config]:
        facts = self.facts
        types = facts.filesystem_types()
        if not types:
            types = ["ext4"]
            self.questions.append(
                QuestionFact("filesystem", "the report names no filesystem", "ext4")
            )
        reporter = types[0]
        configs: list[Config] = []
        for fs_type in types:
            mkfs, mount, lines = self._options_of(fs_type)
            where = f" (line {', '.join(map(str, lines))})" if lines else ""
            own = fs_type == reporter
            label = f"{fs_type}-reported" if own and (mkfs or mount) else fs_type
            description = (
                "the reporter's setup"
                if own
                else "the other filesystem the report names, same workload"
            ) + where
            configs.append(self._config(label, fs_type, description, mkfs, mount))
        if len(types) == 1 and (configs[0].mkfs_options or configs[0].mount_options):
            configs.append(
                self._config(
                    f"{reporter}-default", reporter, "counterpart: mkfs and mount defaults", [], []
                )
            )
        for lever in facts.levers:
            if lever.lever == "bigger-journal" and reporter == "ext4":
                base = configs[0]
                self.questions.append(
                    QuestionFact(
                        "journal size",
                        "the report names a bigger journal but no size",
                        f"{BIG_JOURNAL_MIB} MiB (mkfs.ext4 -J size={BIG_JOURNAL_MIB})",
                        lever.source,
                    )
                )
                configs.append(
                    self._config(
                        f"ext4-journal{BIG_JOURNAL_MIB // 1024}g",
                        "ext4",
                        f'the remedy the report names: "{lever.text}" (line {lever.source.number})',
                        [*_user_mkfs(base), "-J", f"size={BIG_JOURNAL_MIB}"],
                        base.mount_options,
                    )
                )
        return configs

    def _options_of(self, fs_type: str) -> tuple[list[str], list[str], list[int]]:
        mkfs: list[str] = []
        mount: list[str] = []
        lines: list[int] = []
        for fs in self.facts.filesystems:
            if fs.type != fs_type or not (fs.mkfs_options or fs.mount_options):
                continue
            mkfs += [o for o in fs.mkfs_options if o not in mkfs]
            mount += [o for o in fs.mount_options if o not in mount]
            lines.append(fs.source.number)
        return mkfs, mount, lines

    def _config(
        self, label: str, fs_type: str, description: str, mkfs: list[str], mount: list[str]
    ) -> Config:
        config = Config(label, fs_type, description, list(mkfs), list(mount))
        if fs_type == "ext4" and "-E" not in mkfs:
            config.mkfs_options = [*LAZY_INIT, *mkfs]
            config.comments.append(LAZY_INIT_WHY)
        return config

    def _config_table(self, config: Config) -> Table:
        table = tomlkit.table()
        for comment in config.comments:
            for line in _wrap(comment):
                table.add(tomlkit.comment(line))
        table["label"] = config.label
        table["type"] = config.type
        table["description"] = config.description
        if config.mkfs_options:
            table["mkfs_options"] = config.mkfs_options
        if config.mount_options:
            table["mount_options"] = config.mount_options
        return table

    # -- workload -------------------------------------------------------------------------

    def _workload(
        self, target_bytes: int, configs: list[Config]
    ) -> tuple[Table, Table, Table, dict]:
        if self.facts.fio:
            return self._fio(target_bytes)
        return self._dd(configs)

    def _fio(self, target_bytes: int) -> tuple[Table, Table, Table, dict]:
        chosen, swept = self._one_fio_job()
        options = dict(chosen.options)
        self._host_cpus(chosen, options)
        sweep = tomlkit.table()
        quick: dict[str, Any] = {}
        for axis, values in [*chosen.sweeps, *swept.items()]:
            if axis == "numjobs":
                values = self._job_counts(chosen, [str(v) for v in values])
                if not values:
                    options.pop(axis, None)
                    continue
            sweep.add(
                tomlkit.comment(f"the reporter ran these one by one (line {chosen.source.number})")
            )
            sweep[axis] = [_toml_value(v) for v in values]
            options.pop(axis, None)
        jobs_text = options.get("numjobs") or "1"
        counted = self._job_counts(chosen, [jobs_text])
        if not counted:
            options.pop("numjobs")
            jobs_text = "1"
        elif counted[0] != jobs_text:
            jobs_text = options["numjobs"] = counted[0]
        jobs_max = max([int(v) for v in sweep.get("numjobs", [])] or [int(jobs_text)])
        if "numjobs" not in sweep and int(jobs_text) > 1:
            ladder = numjobs_ladder(int(jobs_text))
            sweep.add(
                tomlkit.comment(
                    f"1 up to the reporter's {jobs_text} jobs (line "
                    f"{chosen.source.number}), to show where throughput falls off"
                )
            )
            sweep["numjobs"] = ladder
            options.pop("numjobs")
            self.reported_point["numjobs"] = int(jobs_text)
            quick["sweep.numjobs"] = quick_numjobs(ladder)
        workload = tomlkit.table()
        workload["kind"] = "fio"
        for line in _wrap(
            f"the report's fio {chosen.form} (line {chosen.source.number}); "
            f"fio's own options, with these changes: " + ("; ".join(chosen.notes) or "none")
        ):
            workload.add(tomlkit.comment(line))
        table = tomlkit.table()
        comments = self._scale_files(options, jobs_max, target_bytes)
        for key, value in options.items():
            _add(table, key, True if value is None else _toml_value(value), comments.get(key, ""))
        workload["options"] = table
        run = tomlkit.table()
        reported_runtime = fio_seconds(options.get("runtime")) or None
        scaled = runtime_s(reported_runtime)
        _add(run, "runtime", scaled.value, scaled.comment)
        ramp = fio_seconds(options.get("ramp_time"))
        if ramp:
            _add(run, "ramp", f"{ramp:g}s", "the reporter's ramp_time")
        else:
            _add(
                run,
                "ramp",
                f"{DEFAULT_RAMP_S}s",
                "fslab's warm-up, left out of the figures (the report had none)",
            )
        quick["run.runtime"] = f"{QUICK_RUNTIME_S}s"
        quick["run.ramp"] = f"{QUICK_RAMP_S}s"
        quick["run.repeat"] = QUICK_REPEAT
        return workload, sweep, run, quick

    def _host_cpus(self, job: FioFact, options: dict[str, Any]) -> None:
        """Options the report set to its machine's CPU count take this host's."""
        for name in job.host_cpus:
            self.questions.append(
                QuestionFact(
                    f"fio --{name}",
                    f"the report's --{name}={options[name]} counts the reporter's CPUs",
                    f"this host's {self.host.online_cpus}",
                    job.source,
                )
            )
            options[name] = str(self.host.online_cpus)

    def _job_counts(self, job: FioFact, values: list[str]) -> list[str]:
        """The report's job counts fio can run: [] (asked) if one is not a count, those
        above fio's limit left out (asked), the limit itself if none is left."""
        if not all(v.isdigit() and int(v) >= 1 for v in values):
            self._not_a_count(job, "numjobs", ", ".join(values))
            return []
        kept = [v for v in values if int(v) <= MAX_NUMJOBS]
        if len(kept) < len(values):
            over = ", ".join(v for v in values if int(v) > MAX_NUMJOBS)
            self.questions.append(
                QuestionFact(
                    "fio --numjobs",
                    f"the report's --numjobs={over} is more than fio runs ({MAX_NUMJOBS}, its "
                    "compiled-in limit)",
                    ", ".join(kept) if kept else str(MAX_NUMJOBS),
                    job.source,
                )
            )
        return kept or [str(MAX_NUMJOBS)]

    def _not_a_count(self, job: FioFact, name: str, value: str) -> None:
        self.questions.append(
            QuestionFact(
                f"fio --{name}",
                f"the report's --{name}={value} is not a count of jobs",
                "left out: fslab's ladder of job counts",
                job.source,
            )
        )

    def _one_fio_job(self) -> tuple[FioFact, dict[str, list[str]]]:
        """The report's fio job; several that differ in one option become a sweep of it."""
        jobs = self.facts.fio
        first = jobs[0]
        if len(jobs) == 1:
            return first, {}
        differing = {
            k
            for job in jobs[1:]
            for k in set(first.options) | set(job.options)
            if job.options.get(k) != first.options.get(k)
        }
        if len(differing) == 1 and all(set(j.options) == set(first.options) for j in jobs):
            axis = differing.pop()
            values = list(dict.fromkeys(str(j.options[axis]) for j in jobs))
            return first, {axis: values}
        lines = ", ".join(str(j.source.number) for j in jobs[1:])
        self.questions.append(
            QuestionFact(
                "fio workload",
                f"the report shows {len(jobs)} different fio jobs (also lines {lines})",
                f"the first one (line {first.source.number}); run the others as their own specs",
                first.source,
            )
        )
        return first, {}

    def _scale_files(self, options: dict[str, Any], jobs: int, target_bytes: int) -> dict[str, str]:
        key = "filesize" if "filesize" in options else "size"
        text = options.get(key)
        block = _block_bytes(options)
        try:
            reported = parse_size_bytes(str(text)) if text and "%" not in str(text) else None
        except ValueError:
            return {}
        if text and reported is None:
            return {}
        scaled = per_job_size(reported, jobs, file_budget_bytes(target_bytes, self.host), block)
        if scaled is None:
            return {}
        options[key] = fio_size_text(int(scaled.value))
        return {key: scaled.comment}

    def _dd_amount(self, run: DdFact) -> tuple[str, int]:
        """The report's dd bs and count as fslab runs them; another value is asked about."""
        bs, count = run.operand("bs", "512"), run.operand("count", "1")
        try:
            bs_ok = 0 < parse_size_bytes(bs) <= DD_MAX_BS
        except ValueError:
            bs_ok = False
        if not bs_ok:
            self.questions.append(
                QuestionFact(
                    "dd bs",
                    f"the report's dd bs={bs} is not a block size fslab runs (1 byte to 1GiB)",
                    "bs=1M",
                    run.source,
                )
            )
            bs = "1M"
        if not (count.isdigit() and 0 < int(count) <= DD_MAX_COUNT):
            self.questions.append(
                QuestionFact(
                    "dd count",
                    f"the report's dd count={count} is not a count fslab runs (1 to "
                    f"{DD_MAX_COUNT:,})",
                    "count=1",
                    run.source,
                )
            )
            count = "1"
        return bs, int(count)

    def _dd(self, configs: list[Config]) -> tuple[Table, Table, Table, dict]:
        runs = self.facts.dd
        first = runs[0]
        workload = tomlkit.table()
        workload["kind"] = "dd"
        workload.add(
            tomlkit.comment(
                f"the report's dd (line {first.source.number}): "
                f"{' '.join('='.join(o) for o in first.operands)}"
            )
        )
        bs, count = self._dd_amount(first)
        workload["bs"] = bs
        workload["count"] = count
        for operand in ("conv", "oflag"):
            if first.operand(operand):
                workload[operand] = first.operand(operand)
        others = {(r.operand("bs"), r.operand("count")) for r in runs[1:]}
        others.discard((first.operand("bs"), first.operand("count")))
        if others:
            self.questions.append(
                QuestionFact(
                    "dd",
                    "the report's dd runs write different amounts ("
                    + ", ".join(
                        f"line {r.source.number}: bs={r.operand('bs')} count={r.operand('count')}"
                        for r in runs
                    )
                    + ")",
                    f"every configuration runs the first: bs={first.operand('bs')} count={count}",
                    first.source,
                )
            )
        _add(
            workload,
            "mode",
            "sustained",
            "one dd takes milliseconds here; fslab repeats it "
            "(write + delete) for the runtime, for a stable figure",
        )
        sweep = tomlkit.table()
        written = parse_size_bytes(bs) * count
        for lever in self.facts.levers:
            if lever.lever == "free-space" and any(c.type == "ext4" for c in configs):
                leave = leave_free_bytes(written)
                for line in _wrap(
                    f'the report\'s analysis names free space ("{lever.text}", line '
                    f"{lever.source.number}): each point runs on a fresh filesystem "
                    f"and on one pre-filled to leave {human_bytes(leave)} free "
                    f"(4x what one dd writes, at least 64 MiB)"
                ):
                    sweep.add(tomlkit.comment(line))
                sweep["fill_leave_free"] = ["", human_bytes(leave)]
                self.reported_point["fill_leave_free"] = ""
        run = tomlkit.table()
        _add(run, "runtime", "10s", "sustained dd for 10 s per point")
        return workload, sweep, run, {"run.runtime": "3s", "run.repeat": QUICK_REPEAT}

    def _quick(self, configs: list[Config], settings: dict[str, Any]) -> Table:
        quick = tomlkit.table()
        keep = [configs[0].label]
        lever = next((c.label for c in configs if "remedy" in c.description), None)
        keep.append(lever or (configs[1].label if len(configs) > 1 else configs[0].label))
        quick["filesystems"] = list(dict.fromkeys(keep))
        for line in _wrap(
            "--quick: the reporter's setup and its first counterpart, fewer points, "
            f"shorter runs, {QUICK_REPEAT} runs a point (a verdict on the counterpart "
            "needs 3 or more)"
        ):
            quick.add(tomlkit.comment(line))
        table = tomlkit.table()
        for key, value in settings.items():
            table[key] = value
        quick["set"] = table
        return quick

    # -- what cannot run here, and [reported] ---------------------------------------------

    def _vm_section(self) -> dict[str, str | int] | None:
        return pending.vm_section(self.facts, self.host.nr_cpu_ids) if self.guests else None

    def _vm(self) -> Table | None:
        section = self._vm_section()
        if section is None:
            return None
        vm = tomlkit.table()
        for line in _wrap(
            "every point runs in a qemu guest (docs/guests.md): "
            + self._vm_why(section)
            + "; `fslab kernels fetch` the kernel first"
        ):
            vm.add(tomlkit.comment(line))
        for key, value in section.items():
            vm[key] = value
        return vm

    def _vm_why(self, section: dict[str, str | int]) -> str:
        facts = self.facts
        reasons = []
        kernel = next(
            (k for k in facts.kernels if pending.kernel_series(k.version) == section["kernel"]),
            None,
        )
        if kernel is not None:
            reasons.append(
                f"the report's kernel {kernel.version} (line {kernel.source.number}) as "
                f"Debian's {section['kernel']}"
            )
        if "possible_cpus" in section:
            cpu = max(facts.cpus, key=lambda c: c.count)
            reasons.append(
                f"its {cpu.count} CPUs (line {cpu.source.number}) as the guest's possible "
                f"CPUs (nr_cpu_ids), {section['cpus']} of them online"
            )
        return " and ".join(reasons)

    def _unreproducible(self) -> None:
        facts, host = self.facts, self.host
        vm = self._vm_section()
        runs = (
            f"this spec runs {vm['kernel']} in a guest"
            if vm
            else f"this host runs {host.kernel_release}"
        )
        for kernel in facts.kernels:
            if vm is None or pending.kernel_series(kernel.version) != vm["kernel"]:
                self._cannot(
                    "kernel",
                    kernel.version,
                    kernel.source.number,
                    f"{runs}; fslab's guests boot Debian's {', '.join(OFFERED_SERIES)} "
                    "(or your own build: vm.kernel = PATH)",
                )
        if facts.cpus and vm is None:
            cpu = max(facts.cpus, key=lambda c: c.count)
            if cpu.count != host.online_cpus:
                self._cannot(
                    "cpus",
                    str(cpu.count),
                    cpu.source.number,
                    f"this host has {host.online_cpus} CPUs (nr_cpu_ids {host.nr_cpu_ids})",
                )
        for memory in facts.memory[:1]:
            if vm is None or memory.size_bytes > host.memory_bytes:
                self._cannot(
                    "memory",
                    memory.text,
                    memory.source.number,
                    f"this host has {human_bytes(host.memory_bytes)}"
                    + (", the most a guest can get" if vm else ""),
                )
        for device, why in self.limits.refused:
            self._cannot(
                "device limit",
                device.text,
                device.source.number,
                f"{why}; the RAM-backed image is not throttled to it",
            )
        for patch in facts.patches:
            self._cannot(
                "patch",
                f"{patch.subject or 'a patch'} ({', '.join(patch.files)})",
                patch.source.number,
                "testing it needs a guest kernel built with it",
            )

    def _cannot(self, fact: str, value: str, line: int, reason: str) -> None:
        self.unreproduced.append(ReportedFact(fact=fact, value=value, reason=reason, line=line))
        self.warnings.append(f"line {line}: {fact} {value}: {reason}")

    def _reported(self, source_name: str, configs: list[Config]) -> Table:
        facts = self.facts
        workload = facts.fio[0] if facts.fio else None
        dd = facts.dd[0] if facts.dd else None
        reported = ReportedSpec(
            source=source_name,
            title=facts.title,
            workload=workload.text if workload else (without_prompt(dd.source.text) if dd else ""),
            workload_line=_source_line(workload or dd),
            kernels=[k.version for k in facts.kernels],
            cpus=max((c.count for c in facts.cpus), default=None),
            memory=facts.memory[0].text if facts.memory else "",
            device=next((d.text for d in facts.devices if d.size_bytes), ""),
            point=self.reported_point,
            expected=[self._figure(f, configs) for f in facts.figures],
            hypotheses=[
                ReportedHypothesis(
                    statement=h.statement,
                    line=h.source.number,
                    names=[ReportedName(kind=n.kind, name=n.name) for n in h.names],
                )
                for h in facts.hypotheses
            ],
            unreproduced=self.unreproduced,
            questions=[
                ReportedQuestion(
                    item=q.item,
                    question=q.question,
                    assumed=q.assumed,
                    line=q.source.number if q.source else 0,
                )
                for q in self.questions
            ],
        )
        table = tomlkit.table()
        for line in _wrap(
            "what the report said, for the reply: the reporter's figures "
            "(expected), hypothesis, and what this host cannot reproduce; fslab "
            "stores it with the campaign and does not act on it"
        ):
            table.add(tomlkit.comment(line))
        for key, value in reported.model_dump(exclude_defaults=True).items():
            multiline = isinstance(value, str) and "\n" in value
            table[key] = tomlkit.string(value, multiline=True) if multiline else _toml_tree(value)
        return table

    def _figure(self, figure, configs: list[Config]) -> ReportedFigure:
        reporter = configs[0]
        by_type = {c.type: c.label for c in reversed(configs) if "remedy" not in c.description}
        config = by_type.get(figure.filesystem, "") if figure.filesystem else reporter.label
        return ReportedFigure(
            metric=figure.metric,
            value=float(f"{figure.value:.6g}"),
            unit=figure.unit,
            text=figure.text,
            qualifier=figure.qualifier,
            context=figure.context,
            config=config,
            kernel=figure.kernel,
            line=figure.source.number,
        )


def _user_mkfs(config: Config) -> list[str]:
    options = list(config.mkfs_options)
    if options[:2] == LAZY_INIT:
        options = options[2:]
    return options


def _block_bytes(options: dict[str, Any]) -> int:
    text = str(options.get("bs") or options.get("blocksize") or "4k").split(",")[0].split("-")[-1]
    try:
        size = parse_size_bytes(text)
    except ValueError:
        return 4096
    return size if size > 0 else 4096  # bs=0 is fio's error to report, not a size to divide by


def _toml_value(value: Any) -> Any:
    text = str(value)
    return int(text) if text.isdigit() and len(text) < 12 else text


def _toml_tree(value: Any, *, top: bool = True) -> Any:
    """model_dump output as tomlkit items: a list of records is an array of tables at the
    top of [reported], an array of inline tables below it."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value) and top:
        aot = tomlkit.aot()
        for item in value:
            table = tomlkit.table()
            for key, sub in item.items():
                table[key] = _toml_tree(sub, top=False)
            aot.append(table)
        return aot
    if isinstance(value, list):
        array = tomlkit.array()
        array.extend(_toml_tree(item, top=False) for item in value)
        return array
    if isinstance(value, dict):
        inline = tomlkit.inline_table()
        inline.update(value)
        return inline
    return value


def _add(table: Table, key: str, value: Any, comment: str) -> None:
    """A key with its reason: inline when short, as comment lines above it when long."""
    if comment and len(comment) > 56:
        for line in _wrap(comment):
            table.add(tomlkit.comment(line))
    table[key] = value
    if comment and len(comment) <= 56:
        table[key].comment(comment)


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(text, width=86, subsequent_indent="  ") or [""]


def _source_line(fact: FioFact | DdFact | None) -> int:
    """The report line a workload was read from; 0 when none was found."""
    return fact.source.number if fact else 0
