"""The workload of a report: fio in every form people paste, dd transcripts, other tools.

fio options are imported by fslab's own parser (fslab.workload.fio.options); this module
only finds them in prose and undoes what mail does to them (braces, backticks,
wrapped lines, prompts, absolute paths of the reporter's machine). Every such
change becomes a note or a question, never a silent rewrite.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from fslab.base.errors import UsageError
from fslab.reproduce import fiojobs, fiosyntax, jobnotes, othertools, robot, shell
from fslab.reproduce.ddtext import dd_runs
from fslab.reproduce.facts import (
    DdFact,
    FioFact,
    FioForm,
    Line,
    OtherToolFact,
    QuestionFact,
)
from fslab.reproduce.text import ReportText, prefills
from fslab.workload.fio import options as fio_mod
from fslab.workload.fio import trust as fio_trust

_FIO_START_RE = re.compile(
    r"(?:^|(?<=[\s`'\"(:>{#;]))(?:sudo\s+)?(?:[\w./-]*/)?fio(?:\s+(?=--|-[A-Za-z]|\S+\.fio\b)|$)"
)
_OPTION_LINE_RE = re.compile(r"^\s*--?[A-Za-z]")  # `time fio` wrapped: its options below
_BRACES_RE = re.compile(r"\{\s*(--[^{}]*)\}")  # no lazy run before \s*: linear
_ECHO_OPEN_RE = re.compile(r"^\s*echo\s+['\"](?=\[)")
_ECHO_CLOSE_RE = re.compile(r"['\"]\s*\|\s*(?:sudo\s+)?(?:[\w./-]*/)?fio\b.*$")
_ELIDED_RE = re.compile(r"^\s*(?:\.\.\.|\u2026|\[\.\.\.\])\s*$")
_SECTION_RE = re.compile(r"^\s*\[([A-Za-z0-9_.+-][A-Za-z0-9_.+ -]*)\]\s*$")
_JOB_LINE_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_.-]*)\s*(?:=\s*(.*))?$")
_NAMED_NOT_PASTED = "is named but its contents are not in the report"
_JOINERS = frozenset(("or", "and", "vs", "vs.", "then", "also", "/"))
_SWEEP_COMMENT_RE = re.compile(r"^\s*(?:[0-9A-Za-z_.]+\s*){1,8}$")
# fio options that only make sense on the reporter's machine.
_DROPPED = {
    "allow_file_create": "on a fresh filesystem the file does not exist yet; fio must create it",
    "max_jobs": "fslab sets --max-jobs to each point's numjobs itself",
    "new_group": "fslab runs one job per point; a group boundary changes nothing",
    "eta_newline": "it only changes fio's progress output",
    "eta": "it only changes fio's progress output",
    "latency_log": "fslab reads fio's json+ report, not its log files",
    "bandwidth_log": "fslab reads fio's json+ report, not its log files",
}
MAX_FIO_JOBS = 64
"""fio jobs read from one report; a reply compares a few."""
MAX_FIO_OPTIONS = 512
"""Options of one fio job (fio itself knows about 400)."""


@dataclass
class _Options:
    """What one fio job's options became on the way in: notes, questions, the sweeps a
    shell loop made, the options that counted the reporter's CPUs."""

    source: Line
    questions: list[QuestionFact]
    loops: list[shell.Loop]
    assigned: dict[str, str]
    notes: list[str] = field(default_factory=list)
    sweeps: dict[str, list[str]] = field(default_factory=dict)
    swept_by: dict[str, int] = field(default_factory=dict)  # option -> its loop's first line
    host_cpus: list[str] = field(default_factory=list)

    def ask(self, item: str, question: str, assumed: str) -> None:
        self.questions.append(QuestionFact(item, question, assumed, self.source))


def find_workloads(
    report: ReportText,
) -> tuple[list[FioFact], list[DdFact], list[OtherToolFact], list[QuestionFact]]:
    """Every fio job, dd run and unsupported tool the report shows, in report order."""
    questions: list[QuestionFact] = []
    fio: list[FioFact] = []
    other: list[OtherToolFact] = []
    loops = shell.find_loops(report)
    for form, text, source, sweeps in _fio_candidates(report):
        if len(fio) >= MAX_FIO_JOBS:
            questions.append(
                QuestionFact(
                    "fio workload",
                    f"the report shows more than {MAX_FIO_JOBS} fio jobs",
                    f"the first {MAX_FIO_JOBS} are read, the rest left out",
                    source,
                )
            )
            break
        if _option_count(form, text) > MAX_FIO_OPTIONS:
            questions.append(
                QuestionFact(
                    "fio workload",
                    f"the fio {form} at this line has more than {MAX_FIO_OPTIONS} options",
                    "it is left out of the experiment",
                    source,
                )
            )
            continue
        jobs: list[FioFact] = []
        for piece in _jobs_in_turn(form, text):
            context = _Options(
                source, questions, shell.enclosing(loops, source.number), {}, sweeps=dict(sweeps)
            )
            if "$" in piece:
                context.assigned = shell.assignments(report, source.number)
            fact = _import_fio(form, piece, context, other)
            if fact is not None and not _lays_out_only(fact):
                jobs.append(fact)
        fio.extend(_in_turn_kept(jobs, questions, source))
    fio.extend(robot.lkp_fio(report, questions))
    if len(measured := [f for f in fio if not prefills(report, f.source.number)]) < len(fio):
        fio = measured or fio  # "# prefill the file": setup.py lists it as a step
    if any(f.form == "job file" for f in fio):  # `fio ./4k-write.fio` runs the file pasted
        other = [o for o in other if not o.why.endswith(_NAMED_NOT_PASTED)]
    other.extend(othertools.named_tools(report))
    # a run on the raw device beside one on the filesystem (the report's baseline) is
    # not one fslab runs: the filesystem's run comes first
    fio.sort(key=lambda f: (_on_a_device(f), f.source.number))
    return fio, list(dd_runs(report, other)), other, questions


def _on_a_device(fact: FioFact) -> bool:
    return str(dict(fact.written).get("filename") or "").startswith("/dev/")


def _option_count(form: FioForm, text: str) -> int:
    """Words of a command line; lines of a job file that are not comments."""
    if form != "job file":
        return len(text.split())
    return sum(1 for x in text.split("\n") if fio_mod.strip_job_file_comment(x).strip())


def _jobs_in_turn(form: FioForm, text: str) -> list[str]:
    """The jobs of a file or line that runs several one after another, one text each."""
    if form == "job file":
        return fiojobs.split_job_file(text)
    if form == "command line":
        return fiojobs.split_command_line(_command_words(text)) or [text]
    return [text]


def _in_turn_kept(
    jobs: list[FioFact], questions: list[QuestionFact], source: Line
) -> list[FioFact]:
    """Of jobs run in turn, the first and those that differ from it only in the option
    the second changes (a sweep of it); the others are asked about."""
    if len(jobs) < 2:
        return jobs
    axis, kept = fiojobs.one_option_apart([job.options for job in jobs])
    names = [str(job.options.get("name")) for job in jobs]
    left = [f"[{names[i]}]" for i in range(len(jobs)) if i not in kept]
    if left:
        questions.append(
            QuestionFact(
                "fio workload",
                f"the report's fio runs {len(jobs)} jobs one after another; "
                f"{', '.join(left)} {'changes' if len(left) == 1 else 'change'} more than "
                + (axis or "one option")
                + f" from [{names[0]}]",
                f"measured: {', '.join(f'[{names[i]}]' for i in kept)}; the others are left "
                "out (a spec of their own compares them)",
                source,
            )
        )
    return [jobs[i] for i in kept]


def _lays_out_only(fact: FioFact) -> bool:
    """`--create_only=1`: fio lays the files out and exits; a setup step, not the workload."""
    value = fact.options.get("create_only", "0")
    return value is None or str(value).lower() not in ("0", "false", "off")


# --- fio: command lines, braces, job files -------------------------------------------------


def _fio_candidates(
    report: ReportText,
) -> Iterator[tuple[FioForm, str, Line, dict[str, list[str]]]]:
    joined = report.joined
    brace_spans: list[tuple[int, int]] = []
    for match in _BRACES_RE.finditer(joined):
        brace_spans.append(match.span())
        number = report.offset_to_line(match.start())
        yield "braces", match.group(0), report.line(number), {}
    for number, line in report.numbered():
        for match in _FIO_START_RE.finditer(line):
            offset = sum(len(x) + 1 for x in report.lines[: number - 1]) + match.start()
            if any(start <= offset < end for start, end in brace_spans):
                continue
            below = report.lines[number] if number < len(report.lines) else ""
            if match.end() == len(line) and not _OPTION_LINE_RE.match(below):
                continue
            text = _command_text(report, number, match.start())
            opener = line[match.start() - 1 : match.start()]
            if opener in ("'", '"') and opener in text:  # After running "fio ... --size=4G" for
                text = text[: text.index(opener)].strip()
            if not _in_a_sentence(text):  # "fio --overwrite 0 -> 1 (extend a new file vs"
                yield "command line", text, report.line(number), {}
    yield from _job_files(report)


def _command_text(report: ReportText, number: int, start: int) -> str:
    """A command from `start` on its line, through backslash and indented continuations."""
    parts = [report.lines[number - 1][start:]]
    # `fio -name x -rw=write` wraps without backslashes onto indented `-iodepth 1` lines,
    # or onto lines of nothing but such options (a mail's hard wrap at column 0)
    continuation = (
        r"^\s+-[A-Za-z]|^\s*-[A-Za-z][\w.-]*(?:=\S*)?(?:\s+-[A-Za-z][\w.-]*(?:=\S*)?)*\s*(?:#.*)?$"
        if fiosyntax.single_dash(parts[0])
        else r"^\s*--\w"
    )
    index = number
    while index < len(report.lines):
        current = parts[-1].rstrip()
        following = report.lines[index]
        if current.endswith("\\"):
            parts[-1] = current[:-1]
        elif not re.match(continuation, following) or "`" in shell.unquoted(parts[0])[1:]:
            break
        parts.append(following)
        index += 1
    text = " ".join(part.strip() for part in parts)
    return shell.cut_at_shell_end(text)


def _in_a_sentence(text: str) -> bool:
    """fio and an option named in the mail's prose: plain words no command line has."""
    words = text.split()
    program = next((i for i, w in enumerate(words) if w.rsplit("/", 1)[-1] == "fio"), -1)
    _, stray = fiosyntax.option_pairs(words[program + 1 :])
    return sum(1 for w in stray if re.fullmatch(r"\(?[a-z]{2,}[,.;:)]*", w)) >= 3


def _job_files(report: ReportText) -> Iterator[tuple[FioForm, str, Line, dict[str, list[str]]]]:
    """ini-style job files: [section] headers followed by option lines (also one echoed
    into `fio -` on stdin: `echo '[global]` ... `numjobs=1' | fio --output-format=json -`)."""
    lines = tuple(_ECHO_CLOSE_RE.sub("", _ECHO_OPEN_RE.sub("", x)) for x in report.lines)
    cut = [jobnotes.cut_note(x) for x in lines]  # `numjobs=16 --> changed this for ...`
    lines, notes = tuple(line for line, _ in cut), [note for _, note in cut]
    number = 1
    while number <= len(lines):
        if not _SECTION_RE.match(lines[number - 1]):
            number += 1
            continue
        start, end = number, number
        probe = number + 1
        while probe <= len(lines):
            text = lines[probe - 1]
            if not text.strip():  # a blank line, maybe comments, then the next section
                following = next((x for x in lines[probe:] if _is_content(x)), "")
                if not (_SECTION_RE.match(following) or _is_job_option_line(following)):
                    break
            elif _ELIDED_RE.match(text):  # "..." between [job2] and [job12]: one file
                probe += 1
                continue
            elif not (_SECTION_RE.match(text) or _is_job_option_line(text)):
                break
            end = probe
            probe += 1
        block = [x for x in lines[start - 1 : end] if not _ELIDED_RE.match(x)]
        if any("=" in fio_mod.strip_job_file_comment(x) for x in block):
            sweeps = _comment_sweeps(block)
            for n in range(start, end + 1):
                name = lines[n - 1].split("=", 1)[0].strip()
                changed = jobnotes.says_changed(notes[n - 1]) and name not in sweeps
                if changed and (values := jobnotes.axis_values(report, name)):
                    sweeps[name] = values
            yield "job file", "\n".join(block), report.line(start), sweeps
        number = end + 1


def _is_content(text: str) -> bool:
    """Neither blank nor a job file's comment."""
    return bool(text.strip()) and not text.lstrip().startswith(("#", ";"))


def _is_job_option_line(text: str) -> bool:
    stripped = text.strip()
    if stripped.startswith(("#", ";")):
        return True
    match = _JOB_LINE_RE.match(fio_mod.strip_job_file_comment(text))
    return match is not None and (
        match.group(2) is not None
        or ("_" in match.group(1) and "." not in match.group(1))  # not a title: `dio_rw.fio`
        or fio_trust.rule_name(match.group(1)) in fio_trust.SAFE
    )


def _comment_sweeps(block: Sequence[str]) -> dict[str, list[str]]:
    """`numjobs=1 # 2 4`: the reporter ran the other values one by one; a sweep."""
    sweeps: dict[str, list[str]] = {}
    for text in block:
        value_part = fio_mod.strip_job_file_comment(text)
        comment = text[len(value_part) + 1 :]
        match = _JOB_LINE_RE.match(value_part)
        if not comment or match is None or match.group(2) is None:
            continue
        if _SWEEP_COMMENT_RE.match(comment):  # "bs=8k  # or 16k": the words are not values
            values = [match.group(2).strip(), *(w for w in comment.split() if w not in _JOINERS)]
            sweeps[match.group(1)] = list(dict.fromkeys(values))
    return sweeps


def _import_fio(
    form: FioForm, text: str, context: _Options, other: list[OtherToolFact]
) -> FioFact | None:
    written: list[tuple[str, str | None]] = []
    try:
        if form == "job file":
            written = _job_file_pairs(text)
            cleaned = "\n".join(_rewrite_job_line(x, context) for x in text.split("\n"))
            imported = fio_mod.parse_fio_job_file(cleaned)
        else:
            command = shell.spliced(_command_words(text), context.assigned)
            written = _written_pairs(command, context.assigned)
            words = _rewrite_words(command, context, other)
            if words is None:
                return None
            imported = fio_mod.parse_fio_command_line(shlex.join(words))
    except UsageError as exc:
        context.ask(
            "fio workload",
            f"the fio {form} at this line cannot be used: {exc}",
            "it is left out of the experiment",
        )
        return None
    return FioFact(
        options=imported.options,
        form=form,
        text=text,
        source=context.source,
        notes=tuple(context.notes + imported.notes),
        # the outer loop first: the report's main variable, the inner one within it
        sweeps=tuple(
            (k, tuple(v))
            for k, v in sorted(
                context.sweeps.items(), key=lambda kv: context.swept_by.get(kv[0], 0)
            )
        ),
        host_cpus=tuple(context.host_cpus),
        written=tuple(written),
    )


def _written_pairs(words: list[str], assigned: dict[str, str]) -> list[tuple[str, str | None]]:
    """The options as the reporter wrote them, variables the report assigns filled in."""
    program = next((i for i, w in enumerate(words) if w.rsplit("/", 1)[-1] == "fio"), -1)
    pairs, _ = fiosyntax.option_pairs(words[program + 1 :])
    return [(name, shell.substituted(value, assigned)) for name, value in pairs]


def _job_file_pairs(text: str) -> list[tuple[str, str | None]]:
    pairs: list[tuple[str, str | None]] = []
    for line in text.split("\n"):
        match = _JOB_LINE_RE.match(fio_mod.strip_job_file_comment(line))
        if match and not _SECTION_RE.match(line):
            value = match.group(2)
            pairs.append((match.group(1), value.strip() if value is not None else None))
    return pairs


def _command_words(text: str) -> list[str]:
    joined = re.sub(r"\\[ \t]*(\n|$)", " ", text)
    # a placeholder the reporter left, `--directory <mount point>`: one word
    joined = re.sub(
        r"<([\w .-]{1,40})>", lambda m: "<" + m.group(1).replace(" ", "\u00a0") + ">", joined
    )
    try:
        words = shlex.split(joined)
    except ValueError:
        words = joined.split()
    words = [word.replace("\u00a0", " ") for word in words]
    if words and words[0].startswith("{"):
        words[0] = words[0][1:]
        words[-1] = (
            words[-1].rstrip(".,;")[:-1] if words[-1].rstrip(".,;").endswith("}") else words[-1]
        )
        words = [w for w in words if w]
    program = next((i for i, w in enumerate(words) if w.rsplit("/", 1)[-1] == "fio"), None)
    if program is not None:
        words = [*words[: program + 1], *fiosyntax.long_words(words[program + 1 :])]
    return words


def _rewrite_words(
    words: list[str], context: _Options, other: list[OtherToolFact]
) -> list[str] | None:
    """Options as fslab can run them; None when the command names a job file not shown."""
    program = next((i for i, w in enumerate(words) if w.rsplit("/", 1)[-1] == "fio"), None)
    options = words[program + 1 :] if program is not None else words
    if "-" in options:  # `| fio -`: the job file comes on stdin, read where it is echoed
        return None
    named = [w for w in options if not w.startswith("-")]
    if named and named[0].endswith((".fio", ".job", ".ini")):
        other.append(
            OtherToolFact(
                tool=f"fio {named[0]}",
                why=f"the job file {named[0]} {_NAMED_NOT_PASTED}",
                source=context.source,
            )
        )
        return None
    kept: list[str] = ["fio"]
    for word in options:
        name, sep, value = word.removeprefix("--").partition("=")
        rewritten = _rewrite_option(name, value if sep else None, context)
        if rewritten is not None:
            kept.append(rewritten)
    return kept


def _rewrite_job_line(text: str, context: _Options) -> str:
    match = _JOB_LINE_RE.match(fio_mod.strip_job_file_comment(text))
    if _SECTION_RE.match(text) or match is None:
        return text
    value = match.group(2).strip() if match.group(2) is not None else None
    rewritten = _rewrite_option(match.group(1), value, context)
    return "" if rewritten is None else rewritten.removeprefix("--")


def _rewrite_option(name: str, value: str | None, context: _Options) -> str | None:
    """One option as fslab runs it (None: dropped), saying why when it changes."""
    if (whole := fio_trust.completed_name(name)) is not None:
        context.notes.append(f"--{name} read as --{whole}: fio takes an option's unique prefix")
        name = whole
    key = fio_mod.canonical_name(name)
    if key in _DROPPED:
        context.notes.append(f"dropped {_show(name, value)}: {_DROPPED[key]}")
        return None
    if value == "":
        context.ask(
            f"fio --{name}",
            f"the report's fio option --{name}= has no value",
            "left out: fio's default",
        )
        return None
    if value is not None and ("$" in value or "`" in value):
        value = _shell_value(name, value, context)
        if value is None:
            return None
    if key in ("rw", "readwrite") and value in _RW_SPELLED:
        context.ask(
            f"fio --{name}",
            f"the report's fio --{name}={value} is not a pattern fio takes (fio answers "
            '"failed parsing")',
            f"--{name}={_RW_SPELLED[value]}, the pattern its words name",
        )
        value = _RW_SPELLED[value]
    if not _trusted(name, value, context):
        if context.sweeps.pop(name, None) is not None:  # a loop over it sweeps nothing
            context.notes[:] = [n for n in context.notes if not n.startswith(f"--{name}=")]
        return None
    return _path_option(name, value, context)


# rw= values written out in words ("randomwrite"), which fio refuses, and the pattern meant
_RW_SPELLED = {
    "randomwrite": "randwrite",
    "randomread": "randread",
    "randomrw": "randrw",
    "random_write": "randwrite",
    "random_read": "randread",
    "sequentialwrite": "write",
    "sequentialread": "read",
    "seqwrite": "write",
    "seqread": "read",
}

_LEFT_OUT = {
    "runs": "left out: fslab never runs a program a report names",
    "paths": "left out: fslab never reads or writes paths of the reporter's machine",
    "host": "left out: fio's default on this host",
    "unknown": "left out: fslab carries only fio options it knows to act inside the job's "
    "files on the scratch filesystem",
}


def _trusted(name: str, value: str | None, context: _Options) -> bool:
    """Whether an option may pass from report text into a spec (fio_trust's allowlist).

    What fslab itself sets (directory, output) passes on, to be taken over with a note.
    """
    found = fio_trust.judge(name, value)
    if found is None or fio_mod.is_owned(name):
        return True
    if found.concern == "output":
        context.notes.append(f"dropped {found.shown}: {found.reason}")
        return False
    context.ask(
        f"fio --{name}",
        f"the report's fio option {found.shown}: {found.reason}",
        _LEFT_OUT[found.concern],
    )
    return False


def _shell_value(name: str, value: str, context: _Options) -> str | None:
    """A value with shell expansions as fslab can know it, or None (dropped, asked).

    A loop's variable makes the option a sweep of the loop's values; a variable
    the report assigns takes its value; a CPU count is this host's (the spec
    writer fills it in); fio's own $-keywords stay for fio.
    """
    resolved = value
    for part in shell.expansions(value):
        if part.kind == "fio keyword":
            continue
        if part.kind == "arithmetic":
            resolved = resolved.replace(part.text, shell.arithmetic(part.text) or part.text)
            continue
        if part.kind == "cpu count" and part.text == value:
            context.host_cpus.append(name)
            return value
        loop = next((x for x in reversed(context.loops) if x.variable == part.name), None)
        if part.kind == "variable" and loop is not None:
            values = [resolved.replace(part.text, v) for v in loop.values]
            if fio_mod.canonical_name(name) not in ("name", "description"):
                context.sweeps[name] = values
                context.swept_by[name] = loop.first
                context.notes.append(
                    f"--{name}={value}: the report's loop over ${part.name} "
                    f"(line {loop.first}) is swept: {', '.join(loop.values)}"
                )
            resolved = values[0]
            continue
        if part.kind == "variable" and part.name in context.assigned:
            resolved = resolved.replace(part.text, context.assigned[part.name])
            continue
        what = (
            f"takes the shell variable ${part.name}, which the report does not set"
            if part.kind == "variable"
            else f"takes the output of a command ({part.text}); fslab never runs it"
        )
        context.ask(
            f"fio --{name}",
            f"the report's fio option --{name}={value} {what}",
            "left out: fio's default",
        )
        return None
    if shell.leftover_expansion(resolved):
        context.ask(
            f"fio --{name}",
            f"the report's fio option --{name}={value} needs the shell to compute; "
            "fslab never runs it",
            "left out: fio's default",
        )
        return None
    return resolved


def _path_option(name: str, value: str | None, context: _Options) -> str | None:
    """A file name option kept on the scratch filesystem; a path of the reporter's
    machine becomes its last component, a device is left out."""
    key = fio_mod.canonical_name(name)
    if key not in ("filename", "filename_format") or not value:
        return _show(name, value)
    if fio_mod.is_relative_file_name(value):
        return _show(name, value)
    base = value.rstrip("/").rsplit("/", 1)[-1]
    if fio_mod.is_relative_file_name(base) and not value.startswith("/dev/"):
        context.ask(
            f"fio --{name}",
            f"the report writes to {value}, a path on the reporter's machine",
            f"--{name}={base} on the scratch filesystem (fio creates it there; "
            f"jobs share it as they shared {value})",
        )
        return f"--{name}={base}"
    context.ask(
        f"fio --{name}",
        f"the report writes to {value}, a device or path fslab will not write to",
        "fio names its own files on the scratch filesystem",
    )
    return None


def _show(name: str, value: str | None) -> str:
    return f"--{name}" if value is None else f"--{name}={value}"
