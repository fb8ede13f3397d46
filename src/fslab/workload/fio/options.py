"""fio options: import a pasted command line or job file, build the argv fslab runs.

Bug reports give fio workloads as a command line (often wrapped in prose,
`sudo`, braces or backslash continuations) or as a job file. fslab keeps the
workload exactly as given, except for the few options it must own to run the
job safely on its scratch filesystem and read the result; every such change is
said to the user as a note, and anything that would defeat the experiment
(writing outside the scratch filesystem, several jobs, remote fio) is refused.
"""

from __future__ import annotations

import re
import shlex
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from fslab.base.errors import UsageError
from fslab.base.proc import run

FioOptions = dict[str, str | None]
"""Ordered fio options; a None value is a flag given without a value (time_based)."""

FSLAB_OWNED = ("directory", "output-format", "output")
"""Options fslab sets itself: where the files go, and how fio reports."""

OUTPUT_FORMAT = "json+"
DEFAULT_JOB_NAME = "fslab"

# Options that change fio's report format behind fslab's back: taken over like FSLAB_OWNED.
_OUTPUT_TAKEOVER = {
    "minimal": "it selects fio's terse output; fslab reads json+",
    "append_terse": "it adds terse output; fslab reads json+",
    "terse_version": "it only matters for terse output; fslab reads json+",
    "status_interval": "it interleaves several JSON reports; fslab reads the final one only",
}

# Options that would make the result meaningless or unsafe: refused, never dropped.
_CONFLICTS = {
    "filename": "it names files fio writes to directly, possibly outside the scratch "
    "filesystem; fslab points fio at the scratch filesystem with --directory "
    "(a plain relative name such as --filename=testfile is kept: fio creates it there)",
    "filename_format": "it can place files outside the scratch filesystem; fslab points fio "
    "at the scratch filesystem with --directory (a relative format without '/' is kept)",
    "opendir": "it adds every file under another directory, outside the scratch filesystem",
    "client": "it runs the job on another machine; fslab measures the local kernel",
    "server": "it starts a fio server instead of running a job",
    "daemonize": "it backgrounds a fio server instead of running a job",
    "remote_config": "it only applies to fio client/server runs",
}

# Options that make fio exit without running any workload.
_NO_RUN = (
    "parse_only",
    "showcmd",
    "version",
    "help",
    "cmdhelp",
    "enghelp",
    "crctest",
    "cpuclock_test",
    "merge_blktrace_only",
    "inflate_log",
)

# Options fio accepts only on its command line, never inside a job file.
_COMMAND_LINE_ONLY = (
    "debug",
    "output",
    "output_format",
    "bandwidth_log",
    "minimal",
    "append_terse",
    "terse_version",
    "readonly",
    "eta",
    "eta_interval",
    "eta_newline",
    "status_interval",
    "section",
    "alloc_size",
    "warnings_fatal",
    "max_jobs",
    "idle_prof",
    "trigger_file",
    "trigger_timeout",
    "trigger",
    "trigger_remote",
    "aux_path",
)

_NO_OVERRIDES: Mapping[str, str | int | None] = MappingProxyType({})
_JOB_FILE_SUFFIXES = (".fio", ".job", ".ini", ".cfg", ".conf")
_OPTION_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass
class FioImport:
    """An imported fio workload and what fslab changed in it, to tell the user."""

    options: FioOptions
    notes: list[str] = field(default_factory=list)


def canonical_name(option: str) -> str:
    """Option name for comparisons: fio users mix `output-format` and `output_format`."""
    return option.lower().replace("-", "_")


def is_owned(option: str) -> bool:
    """An option fslab sets itself (FSLAB_OWNED)."""
    return canonical_name(option) in {canonical_name(o) for o in FSLAB_OWNED}


# --- command line -------------------------------------------------------------------------


def parse_fio_command_line(text: str) -> FioImport:
    """Import a fio command line pasted from a bug report or a shell history."""
    tokens = _strip_braces(_split_shell_words(text))
    notes: list[str] = []
    tokens = _strip_command_prefix(tokens, notes)
    if not tokens:
        raise UsageError("the fio command line has no options (expected --name=... --rw=...)")
    pairs = _option_pairs(tokens)
    return _finish_import(pairs, notes, source="command line")


def _split_shell_words(text: str) -> list[str]:
    """Shell words of the pasted text, backslash-newline continuations joined."""
    joined = re.sub(r"\\[ \t]*\r?\n", " ", text)
    try:
        return shlex.split(joined)
    except ValueError as exc:
        raise UsageError(f"cannot split the fio command line into words: {exc}") from exc


def _strip_braces(tokens: list[str]) -> list[str]:
    """Drop a `{ ... }` wrapper, as bug reports quote commands inside prose."""
    if not tokens or not tokens[0].startswith("{"):
        return tokens
    last = tokens[-1].rstrip(".,;")
    if not last.endswith("}"):
        raise UsageError("the fio command line opens with '{' but has no closing '}'")
    tokens = [tokens[0][1:], *tokens[1:-1], last[:-1]] if len(tokens) > 1 else [tokens[0][1:-1]]
    return [t for t in tokens if t]


def _strip_command_prefix(tokens: list[str], notes: list[str]) -> list[str]:
    """Drop `sudo`, env assignments and the fio program name before the options."""
    first_option = next((i for i, t in enumerate(tokens) if t.startswith("--")), len(tokens))
    prefix = tokens[:first_option]
    fio_at = next((i for i, t in enumerate(prefix) if t.rsplit("/", 1)[-1] == "fio"), None)
    if fio_at is None:
        if prefix:
            raise UsageError(_stray_word_message(prefix[0], previous=None))
        return tokens
    ignored = [t for t in prefix[:fio_at] if t != "sudo"]
    if ignored:
        notes.append(f"ignored {shlex.join(ignored)!r} before fio: fslab runs fio itself")
    if fio_at + 1 < len(prefix):
        raise UsageError(_stray_word_message(prefix[fio_at + 1], previous=None))
    return tokens[fio_at + 1 :]


def _option_pairs(tokens: list[str]) -> list[tuple[str, str | None]]:
    """`--opt=value` and bare `--flag` words as (name, value) pairs, in order."""
    pairs: list[tuple[str, str | None]] = []
    previous: str | None = None
    for token in tokens:
        if not token.startswith("--") or token == "--":
            if token.startswith("-") and token != "-":
                raise UsageError(
                    f"fio option {token!r}: fio takes long options only (--name=value)"
                )
            raise UsageError(_stray_word_message(token, previous))
        name, sep, value = token[2:].partition("=")
        _check_option_name(name)
        pairs.append((name, value if sep else None))
        previous = token if not sep else None
    return pairs


def _stray_word_message(word: str, previous: str | None) -> str:
    if previous is not None:
        return (
            f"stray word {word!r} after {previous}: write {previous}={word} "
            f"(fslab reads fio options only as --option=value or a bare --flag)"
        )
    if word.endswith(_JOB_FILE_SUFFIXES) or "/" in word:
        return (
            f"{word!r} looks like a job file named on the command line: fslab cannot read "
            f"it from here; give the job file's contents instead (workload.job_file)"
        )
    return f"stray word {word!r} in the fio command line: fio options look like --option=value"


def _check_option_name(name: str) -> None:
    if not _OPTION_NAME_RE.match(name):
        raise UsageError(f"not a fio option name: {name!r}")


def parse_fio_options(options: Mapping[str, str | int | float | bool | None]) -> FioImport:
    """Import options given as a table (a spec's [workload.options]) under the same rules.

    True or None means a bare flag; False leaves the option out, as if not given.
    """
    pairs: list[tuple[str, str | None]] = []
    for name, value in options.items():
        _check_option_name(name)
        if value is False:
            continue
        pairs.append((name, None if value is None or value is True else str(value)))
    return _finish_import(pairs, [], source="options")


# --- job file -----------------------------------------------------------------------------


@dataclass
class JobSection:
    name: str
    pairs: list[tuple[str, str | None]] = field(default_factory=list)


def parse_fio_job_file(text: str) -> FioImport:
    """Import an ini-style fio job file: [global] sections plus exactly one job."""
    sections = job_file_sections(text)
    jobs = [s for s in sections if s.name != "global"]
    if not jobs:
        raise UsageError("the fio job file defines no job section (only [global] or nothing)")
    if len(jobs) > 1:
        names = ", ".join(f"[{s.name}]" for s in jobs[:8]) + (", ..." if len(jobs) > 8 else "")
        raise UsageError(
            f"the fio job file defines {len(jobs)} jobs ({names}): fslab runs one job per "
            f"point; keep one section (use numjobs= for parallel copies of it)"
        )
    job = jobs[0]
    job_index = sections.index(job)
    notes: list[str] = []
    pairs: list[tuple[str, str | None]] = []
    for index, section in enumerate(sections):
        if section.name == "global" and index > job_index:
            if section.pairs:
                notes.append(
                    f"a [global] section after [{job.name}] does not apply to it in fio; "
                    f"ignored: {_describe_pairs(section.pairs)}"
                )
            continue
        if section is job:
            pairs.append(("name", job.name))
            pairs.extend(_without_name_key(section.pairs, job.name, notes))
        else:
            pairs.extend(_without_name_key(section.pairs, job.name, notes))
    return _finish_import(pairs, notes, source="job file", duplicates_are_notes=False)


def strip_job_file_comment(line: str) -> str:
    """A job file line without its comment: fio cuts each line at the first '#' or ';'."""
    cut = min((i for i in (line.find("#"), line.find(";")) if i >= 0), default=len(line))
    return line[:cut]


def job_file_sections(text: str) -> list[JobSection]:
    """A job file's sections in order, [global] ones included, comments dropped."""
    sections: list[JobSection] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = strip_job_file_comment(raw).strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            sections.append(JobSection(line[1:-1].strip()))
            continue
        if line.startswith("include ") or line == "include":
            raise UsageError(
                f"job file line {number}: 'include' is not followed by fslab; "
                f"paste the included options into the job file"
            )
        if not sections:
            raise UsageError(f"job file line {number}: option {line!r} before any [section]")
        name, sep, value = line.partition("=")
        name = name.strip()
        _check_option_name(name)
        sections[-1].pairs.append((name, value.strip() if sep else None))
    return sections


def _without_name_key(
    pairs: list[tuple[str, str | None]], job_name: str, notes: list[str]
) -> list[tuple[str, str | None]]:
    """The section header names the job; a name= line inside is dropped, with a note."""
    kept = []
    for name, value in pairs:
        if canonical_name(name) == "name":
            notes.append(f"ignored name={value} in the job file: the job is named [{job_name}]")
        else:
            kept.append((name, value))
    return kept


def _describe_pairs(pairs: Iterable[tuple[str, str | None]]) -> str:
    return " ".join(name if value is None else f"{name}={value}" for name, value in pairs)


# --- shared import rules ------------------------------------------------------------------


def _finish_import(
    pairs: list[tuple[str, str | None]],
    notes: list[str],
    *,
    source: str,
    duplicates_are_notes: bool = True,
) -> FioImport:
    """Apply fslab's ownership and conflict rules to imported options, in order."""
    names = [value for name, value in pairs if canonical_name(name) == "name"]
    if len(names) > 1:
        raise UsageError(
            f"--name given {len(names)} times ({', '.join(repr(n) for n in names)}): fio would "
            f"run {len(names)} jobs, fslab runs one job per point; keep one --name "
            f"(use --numjobs for parallel copies) or make each job its own experiment"
        )
    options: FioOptions = {}
    for name, value in pairs:
        refuse_conflicts(name, value)
        taken_over = _takeover_note(name, value)
        if taken_over:
            notes.append(taken_over)
            continue
        if name in options and duplicates_are_notes and options[name] != value:
            notes.append(
                f"--{name} given more than once in the {source}; the last one "
                f"({_show(name, value)}) is used, as fio does"
            )
        options[name] = value
    return FioImport(options=_name_first(options, notes, source), notes=notes)


_RELATIVE_FILE_RE = re.compile(r"^[A-Za-z0-9_$+][A-Za-z0-9_.$+-]*$")
_RELATIVE_FILE_OPTIONS = ("filename", "filename_format")


def is_relative_file_name(value: str | None) -> bool:
    """A file name fio creates inside --directory: one path component, no ':' list.

    fio prefixes --directory to a relative filename (and filename_format), so
    such a name stays on the scratch filesystem; a path, '..' or a ':' list
    may not.
    """
    return value is not None and value not in (".", "..") and bool(_RELATIVE_FILE_RE.match(value))


def refuse_conflicts(name: str, value: str | None = None) -> None:
    """UsageError for an option that defeats the experiment or would run no job."""
    key = canonical_name(name)
    if key in _RELATIVE_FILE_OPTIONS and is_relative_file_name(value):
        return
    if key in _CONFLICTS:
        raise UsageError(f"fio option --{name} cannot be used with fslab: {_CONFLICTS[key]}")
    if key in _NO_RUN:
        raise UsageError(f"fio option --{name} cannot be used with fslab: fio would run no job")


def _takeover_note(name: str, value: str | None) -> str | None:
    """The note for an option fslab takes over, or None if the option is kept."""
    if is_owned(name):
        ours = {
            "directory": "the scratch filesystem's mount point",
            "output_format": OUTPUT_FORMAT,
            "output": "its own capture of fio's stdout",
        }[canonical_name(name)]
        return f"dropped {_show(name, value)}: fslab sets it itself ({ours})"
    reason = _OUTPUT_TAKEOVER.get(canonical_name(name))
    if reason:
        return f"dropped {_show(name, value)}: {reason}"
    return None


def _name_first(options: FioOptions, notes: list[str], source: str) -> FioOptions:
    """Put the job name first; name the job if the source did not (fio would run nothing)."""
    name = options.pop("name", None)
    if not name:
        name = DEFAULT_JOB_NAME
        notes.append(f"the {source} names no job (--name); fslab names it {name!r}")
    return {"name": name, **options}


def _show(name: str, value: str | None) -> str:
    """An option as written on fio's command line."""
    return f"--{name}" if value is None else f"--{name}={value}"


# --- building -----------------------------------------------------------------------------


def apply_overrides(
    options: FioOptions, overrides: Mapping[str, str | int | None] = _NO_OVERRIDES
) -> FioOptions:
    """Options with sweep values applied: replaced in place, new ones appended in order."""
    merged: FioOptions = dict(options)
    for name, value in overrides.items():
        _check_option_name(name)
        refuse_conflicts(name, None if value is None else str(value))
        if is_owned(name):
            raise UsageError(f"cannot override fio option {name!r}: fslab sets it itself")
        merged[name] = None if value is None else str(value)
    return merged


def build_fio_argv(
    options: FioOptions,
    *,
    directory: str,
    overrides: Mapping[str, str | int | None] = _NO_OVERRIDES,
) -> list[str]:
    """The fio argv for one point: fslab's own options first, then the job's, in order."""
    merged = apply_overrides(options, overrides)
    for name, value in merged.items():
        refuse_conflicts(name, value)
        if is_owned(name):
            raise UsageError(f"fio option {name!r} is set by fslab; remove it from the options")
    name = merged.pop("name", None) or DEFAULT_JOB_NAME
    argv = ["fio", f"--output-format={OUTPUT_FORMAT}", f"--directory={directory}", f"--name={name}"]
    argv.extend(_show(key, value) for key, value in merged.items())
    return argv


def fio_job_text(options: FioOptions, *, directory: str) -> str:
    """The equivalent job file, to reproduce a point by hand without fslab."""
    job = dict(options)
    name = job.pop("name", None) or DEFAULT_JOB_NAME
    if "]" in name or "\n" in name:
        raise UsageError(f"fio job name {name!r} cannot be a job file section name")
    command_only = {k: v for k, v in job.items() if canonical_name(k) in _COMMAND_LINE_ONLY}
    run_flags = [f"--output-format={OUTPUT_FORMAT}"]
    run_flags += [_show(k, v) for k, v in command_only.items()]
    lines = [
        "; fio job written by fslab; run it with:",
        f";   {shlex.join(['fio', *run_flags])} job.fio",
        f"[{name}]",
        f"directory={directory}",
    ]
    for key, value in job.items():
        if key in command_only:
            continue
        if value is not None and "\n" in value:
            raise UsageError(f"fio option {key!r} has a line break in its value")
        lines.append(key if value is None else f"{key}={value}")
    return "\n".join(lines) + "\n"


def validate_with_fio(
    options: FioOptions, *, overrides: Mapping[str, str | int | None] = _NO_OVERRIDES
) -> str | None:
    """fio's own complaint about the options (`fio --parse-only`), or None if it accepts them.

    Run before any device is touched, so a typo in a spec fails in a second
    instead of after mkfs. Raises ToolError if fio itself is missing.
    """
    with tempfile.TemporaryDirectory(prefix="fslab-fio-parse-") as scratch:
        argv = build_fio_argv(options, directory=scratch, overrides=overrides)
        argv.insert(1, "--parse-only")
        record = run(argv, check=False, timeout_s=60)
    if record.returncode == 0:
        return None
    complaint = _unique_lines(record.stderr + "\n" + record.stdout)
    return complaint or f"fio --parse-only exited with status {record.returncode}"


def _unique_lines(text: str) -> str:
    """fio prints some complaints twice (once per parse pass); say each once."""
    seen: list[str] = []
    for line in text.splitlines():
        if line.strip() and line not in seen:
            seen.append(line)
    return "\n".join(seen)
