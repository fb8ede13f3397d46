"""Filesystems in a report: mkfs and mount commands, quoted mount options, names in prose."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import replace
from itertools import pairwise

from fslab.reproduce import shell
from fslab.reproduce.facts import FilesystemFact, FilesystemHow, QuestionFact
from fslab.reproduce.text import ReportText, without_prompt
from fslab.spec.model import FS_TYPES

_MKFS_RE = re.compile(r"^(?:sudo\s+)?(mkfs\.(?:ext4|xfs|btrfs)|mkfs|mke2fs)\s+(.*)$")
_MOUNT_RE = re.compile(r"^(?:sudo\s+)?mount\s+(.*)$")
# an image file as the device: `mkfs.ext4 sparse1.img`, `mount -o discard sparse1.img /mnt`
_IMAGE_FILE_RE = re.compile(r"[\w.-]+\.(?:img|image|raw)")
_QUOTED_OPTIONS_RE = re.compile(
    r"""["'“]\s*-o\s+([A-Za-z0-9_=,.:-]+)\s*["'”]|\bmounted\s+with\s+["“]([A-Za-z0-9_=,.:-]+)["”]"""
    # unquoted, an option with a value: "mounted with compress=zstd:3"
    r"""|\bmounted\s+with\s+(?:-o\s+)?([a-z_-]+=[\w:]+(?:\.[\w:]+)*(?:,[a-z_-]+(?:=[\w:]+)?)*)"""
)
# a /proc/mounts (or /etc/fstab) line: device, mount point, type, options, dump, pass
_MOUNTS_LINE_RE = re.compile(
    r"^\s*(?P<dev>/dev/\S+)\s+(?P<at>/\S*)\s+(?P<type>ext4|xfs|btrfs)\s+(?P<opts>\S+)"
    r"\s+\d+\s+\d+\s*$"
    # mount(8)'s own output, "/dev/md0p1 on /home type ext4 (rw,relatime,stripe=32745)",
    # or its type and options alone
    r"|^\s*(?:(?P<dev2>\S+)\s+on\s+(?P<at2>\S+)\s+type\s+)?(?P<type2>ext4|xfs|btrfs)"
    # (options are words, each with a value that may hold a path: not "(usr/sys)")
    r"\s+\((?P<opts2>[\w.:+-]+(?:=[^()\s,]*)?(?:,[\w.:+-]+(?:=[^()\s,]*)?)*)\)\s*$"
)
# what /proc/mounts shows for every mount of the type, given or not: not the reporter's
_OPTION_VARIABLE_RE = re.compile(
    r"^(?:export\s+)?(?:(MKFS_OPT(?:ION)?S?|MKFS_ARGS)|(MOUNT_OPT(?:ION)?S?|MNT_OPTS?))="
    r"[\"']?([^\"'$`;]*)[\"']?\s*(?:#.*)?$"
)
_MOUNTS_DEFAULTS = re.compile(
    r"^(?:rw|defaults|relatime|seclabel|attr2|inode64|noquota|logbufs=8|logbsize=32k|"
    r"sunit=\d+|swidth=\d+|data=ordered|space_cache(?:=v\d)?|subvolid=\d+|subvol=/?|ssd)$"
)
_PROSE_FS_RE = re.compile(r"(?<![\w/.-])(ext4|xfs|btrfs)(?![\w/-]|\.\w)", re.IGNORECASE)
# a robot's `fs: xfs`; FxMark's `fstype: ext4_no_jnl` is ext4 made without a journal
_PARAMETER_FS_RE = re.compile(r"^\s*(?:fs|fstype):\s*(ext4|xfs|btrfs)(_no_jnl)?\s*$")
# "  btrfs: -m raid1 -d raid0" in a test-case list: the mkfs options without the command
# "Both filesystems are mounted with ...": a mount fact for each filesystem the report names
_EVERY_FS_RE = re.compile(
    r"\b(?:both|all|each\s+of\s+the)\s+(?:file\s*systems|filesystems|fs)\b", re.I
)
EVERY_FS = "*"
_VARIABLE_RE = re.compile(r"^\$(?:\{\w+\}|\w+)$")
_MOUNT_GREP_RE = re.compile(r"^mount\s*\|.*?\bgrep\s+(?:-w\s+)?(ext4|xfs|btrfs)\b(.*)$")
_BTRFS_ATTACHED_RE = re.compile(r"^(-[dm])(raid\w+|single|dup)$")
_FS_COMMAND_RE = re.compile(r"^(?:sudo\s+)?(?:mkfs|mke2fs|mount)\b")
_REDIRECT_RE = re.compile(r"\s(?:\d?>>?|&>|\|)")  # one space: `\s+` backtracks on long runs
# a sentence quoting the options: "formatted with mkfs.xfs -d agcount=1 -l size=128m."
_PROSE_MKFS_RE = re.compile(
    r"\b(?:formatted|made|created|built)\s+with\s+(mkfs\.(?:ext4|xfs|btrfs)|mke2fs)"
    r"((?:\s+-{1,2}[A-Za-z][\w-]*(?:[ =][\w=.,^:+][\w=.,^:+-]*)?)+)\s*$"
)
_PROSE_MOUNT_RE = re.compile(r"\bmounted\s+(?:with\s+)?-o\s+([\w=.,:+-]+?)\.?\s*$")
_MKFS_OUTPUT_RE = re.compile(r"^(?:meta-data|data|naming|log|realtime)\s*=")
_OPTION = r"[a-z_][a-z0-9_]*(?:=[\w:.]+)?"
_OPTIONS_LISTED_RE = re.compile(
    r"^\s*[-*]?\s*(mkfs|mount)\s+(?:parameters|options|opts|args)\s*:?\s+"
    rf"(?:(-[A-Za-z][\w=.,^:+ -]*?)\s*$|({_OPTION}(?:,{_OPTION})+)\b)",
    re.I,
)
_OPTIONS_HEADING_RE = re.compile(r"^\s*(?:(ext4|xfs|btrfs)\s+)?(?:mount\s+)?options\s*:?\s*$", re.I)
_ROW_OPTION = r"[a-z_][a-z0-9_]*(?:=[\w:./-]*)?"
_OPTIONS_ROW_RE = re.compile(rf"^\s*{_ROW_OPTION}(?:,{_ROW_OPTION})+,?\s*$")
_LISTED_MKFS_RE = re.compile(r"^\s+(ext4|xfs|btrfs):\s+(-[A-Za-z].*)$")
# mkfs flags fslab passes itself (force, quiet), so a pasted one is not kept twice.
_FORCE_FLAGS = {"-f", "-F", "-q"}
MAX_WRAPPED_LINES = 4
"""Lines a mailer breaks one mkfs or mount command into, at most."""
MAX_FS_OPTIONS = 64
"""Options of one mkfs or mount command (a real one has a handful)."""


def find_filesystems(report: ReportText) -> tuple[list[FilesystemFact], list[QuestionFact]]:
    """mkfs/mount commands first (they carry options), then names the prose compares."""
    facts: list[FilesystemFact] = []
    questions: list[QuestionFact] = []
    assigned: dict[str, str] | None = None
    about_ext4: bool | None = None
    for number, line in report.numbered():
        command = without_prompt(line)
        if _FS_COMMAND_RE.match(command):
            if "$" in command:
                if assigned is None:
                    assigned = shell.assignments(report, len(report.lines) + 1)
                command = shell.substituted(command, assigned) or command
            command = _REDIRECT_RE.split(command, maxsplit=1)[
                0
            ].rstrip()  # `> /dev/null`: no device
            command = _unwrapped(report, number, command)
        if (said := _options_listed(line, report, number)) is not None:
            facts.append(said)
            continue
        listed = _LISTED_MKFS_RE.match(line)
        if listed:
            facts.append(
                FilesystemFact(
                    type=listed.group(1),
                    source=report.line(number),
                    how="mkfs",
                    mkfs_options=tuple(_words(listed.group(2))),
                )
            )
            continue
        mkfs = _MKFS_RE.search(command)
        if mkfs:
            if about_ext4 is None:  # read once, not per mkfs line
                about_ext4 = re.search(r"\bext4\b", report.joined, re.I) is not None
            fact = _mkfs_fact(mkfs.group(1), mkfs.group(2), report, number, about_ext4)
            if fact is None and _STEP_MKFS_RE.match(line):  # "2.  mkfs.btrfs over a partition."
                fact = FilesystemFact(
                    mkfs.group(1).removeprefix("mkfs."), report.line(number), "mkfs"
                )
            if fact is not None and _bounded(fact, questions):
                facts.append(_without_unset(fact, questions))
            continue
        mount = _MOUNT_RE.search(command)
        if mount and (fact := _mount_fact(mount.group(1), report, number)) is not None:
            if _bounded(fact, questions):
                facts.append(fact)
            continue
        checked = _MOUNT_GREP_RE.match(without_prompt(line))
        if checked:  # `mount | grep ext4 | grep -w dioread_nolock`: the options it has
            options = re.findall(r"\bgrep\s+-w\s+['\"]?([a-z_]+(?:=[\w:.]+)?)", checked.group(2))
            if options:
                facts.append(_mounted(report, number, checked.group(1), options))
            continue
        table = _MOUNTS_LINE_RE.match(line)
        if table:
            shown = table["opts"] or table["opts2"]
            options = [o for o in shown.split(",") if not _MOUNTS_DEFAULTS.match(o)]
            fact = _mounted(
                report,
                number,
                table["type"] or table["type2"],
                options,
                table["dev"] or table["dev2"] or "",
                table["at"] or table["at2"] or "",
            )
            if _bounded(fact, questions):
                facts.append(fact)
            continue
        if (said := _said_in_prose(line, report, number)) is not None:
            facts.append(said)
            continue
        # a mail wraps "mounted with" and its quoted options onto two lines
        following = report.lines[number] if number < len(report.lines) else ""
        wrapped = f"{line} {following.strip()}"
        quoted = _QUOTED_OPTIONS_RE.search(wrapped)
        if quoted and quoted.start() < len(line) and re.search(r"mount", line, re.IGNORECASE):
            every = _EVERY_FS_RE.search(line) and not _fs_named(line)
            facts.append(
                FilesystemFact(
                    type=EVERY_FS if every else _fs_named(line) or "",
                    source=report.line(number),
                    how="mount",
                    mount_options=tuple(next(g for g in quoted.groups() if g).split(",")),
                )
            )
    if not any(f.how in ("mkfs", "mount") for f in facts):
        facts.extend(_option_variables(report))
    facts.extend(_prose_mentions(report))
    return _typed(facts, questions), questions


def _option_variables(report: ReportText) -> Iterator[FilesystemFact]:
    """`MKFS_OPTS="-O ^has_journal"`, `MNT_OPTS="-o noatime"`, xfstests' `FSTYP=ext4`: the
    options of a script whose mkfs and mount lines the report leaves out, one fact per
    assignment (two values of one variable are the runs' difference)."""
    fs_type = next((t for t in shell.all_assignments(report, "FSTYP") if t in FS_TYPES), "")
    for number, raw in report.numbered():
        match = _OPTION_VARIABLE_RE.match(without_prompt(raw))
        if match is None:
            continue
        words = _words(match.group(3))
        if match.group(1):
            yield FilesystemFact(fs_type, report.line(number), "mkfs", mkfs_options=tuple(words))
            continue
        options = [
            o
            for w in _mount_option_words(words)
            for o in w.split(",")
            if o and not _MOUNTS_DEFAULTS.match(o)
        ]
        yield FilesystemFact(fs_type, report.line(number), "mount", mount_options=tuple(options))


def _mount_option_words(words: list[str]) -> list[str]:
    """`-o a,b` or `a,b`: the option lists among a mount variable's words."""
    if "-o" not in words:
        return [w for w in words if not w.startswith("-")]
    return [w for prev, w in pairwise(words) if prev == "-o"]


def _mounted(
    report: ReportText,
    number: int,
    fs_type: str,
    options: list[str],
    device: str = "",
    at: str = "",
) -> FilesystemFact:
    """A mount the report shows rather than runs (mount(8)'s output, a grep of it)."""
    return FilesystemFact(
        type=fs_type,
        source=report.line(number),
        how="mount",
        device=device,
        mountpoint=at,
        mount_options=tuple(options),
    )


def _unwrapped(report: ReportText, number: int, command: str) -> str:
    """A mkfs or mount command the mailer broke after an option that takes a value
    (`mkfs.xfs -f -l` / `size=1310b,sunit=8 /dev/x`), or before its options or paths
    (`mount` / `-onoatime,...` / `/dev/sda /mnt/test/`): joined with its continuations."""
    needed = 2 if re.match(r"^(?:sudo\s+)?mount\b", command) else 1  # device and mountpoint
    last = min(len(report.lines), number + MAX_WRAPPED_LINES)
    while number < last:
        following = report.lines[number].strip()
        if command.endswith("\\"):  # a shell continuation: the next line, without the `\`
            command = f"{command[:-1].rstrip()} {without_prompt(following)}"
            number += 1
            continue
        paths = [w for w in command.split()[1:] if w.startswith(("/", "$"))]
        # a flag that takes a value (`-l`), not one that takes none (`-f`), nor mkfs's output
        flag_last = re.search(r"\s-\w$", command) and command.split()[-1] not in _FORCE_FLAGS
        if _MKFS_OUTPUT_RE.match(following) or not (
            flag_last or (len(paths) < needed and re.match(r"^[-/$]", following))
        ):
            break
        command = f"{command} {following}"
        number += 1
    return command


def _without_unset(fact: FilesystemFact, questions: list[QuestionFact]) -> FilesystemFact:
    """mkfs options the report leaves as a variable it never sets (`$MKFS_OPTIONS`)."""
    unset = [o for o in fact.mkfs_options if _VARIABLE_RE.match(o)]
    if not unset:
        return fact
    questions.append(
        QuestionFact(
            "mkfs options",
            f"the report's mkfs passes {', '.join(unset)}, which it never sets",
            "mkfs defaults in its place",
            fact.source,
        )
    )
    kept = tuple(o for o in fact.mkfs_options if o not in unset)
    return replace(fact, mkfs_options=kept)


def _bounded(fact: FilesystemFact, questions: list[QuestionFact]) -> bool:
    """Whether a command's options are few enough to carry into a spec (else asked)."""
    if max(len(fact.mkfs_options), len(fact.mount_options)) <= MAX_FS_OPTIONS:
        return True
    questions.append(
        QuestionFact(
            f"{fact.how} options",
            f"the {fact.how} command at this line has more than {MAX_FS_OPTIONS} options",
            "it is left out of the experiment",
            fact.source,
        )
    )
    return False


# a numbered step that makes the filesystem in words: "2.  mkfs.btrfs over a partition."
_STEP_MKFS_RE = re.compile(rf"^\s*\d{{1,2}}[.)]\s+mkfs\.({'|'.join(sorted(FS_TYPES))})\s+[a-z]")


def _mkfs_fact(
    program: str, rest: str, report: ReportText, number: int, about_ext4: bool
) -> FilesystemFact | None:
    words = _words(rest)
    fs_type = program.removeprefix("mkfs.") if program.startswith("mkfs.") else ""
    if program == "mke2fs" and about_ext4:
        fs_type = "ext4"  # mke2fs without -t, in a report about ext4 (-t below still wins)
    options: list[str] = []
    devices: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word == "-t" and index + 1 < len(words):
            fs_type = words[index + 1]
            index += 2
            continue
        last = index == len(words) - 1
        # a device path, or the last word as a path or a shell variable ("-F $ramdev")
        if word.startswith("/dev/") or (
            last
            and (word.startswith("/") or _VARIABLE_RE.match(word) or _IMAGE_FILE_RE.fullmatch(word))
        ):
            devices.append(word)
        elif word not in _FORCE_FLAGS:
            options.append(word)
        index += 1
    if fs_type not in FS_TYPES or not devices:  # "mkfs.xfs printed ..." in a sentence
        return None
    devices = [one for device in devices for one in _globbed(device)]
    if fs_type == "btrfs":  # -draid6 -mraid6: the profile flags with their values attached
        options = [w for o in options for w in _BTRFS_ATTACHED_RE.sub(r"\1 \2", o).split(" ")]
    return FilesystemFact(
        type=fs_type,
        source=report.line(number),
        how="mkfs",
        device=devices[0] if devices else "",
        mkfs_options=tuple(options),
        extra_devices=tuple(devices[1:]),
    )


def _globbed(device: str) -> list[str]:
    """The devices a shell glob names: /dev/sd[abcd] or /dev/sd[a-d] is four."""
    match = re.fullmatch(r"(/dev/\w*)\[([a-z0-9-]+)\](\w*)", device)
    if match is None:
        return [device]
    letters = re.sub(
        r"(\w)-(\w)", lambda m: "".join(map(chr, range(ord(m[1]), ord(m[2]) + 1))), match[2]
    )
    return [f"{match[1]}{c}{match[3]}" for c in dict.fromkeys(letters)][:64]


def _mount_fact(rest: str, report: ReportText, number: int) -> FilesystemFact | None:
    words = _words(rest)
    fs_type, options, positional = "", list[str](), list[str]()
    index = 0
    while index < len(words):
        word = words[index]
        if word in ("-t", "-o") and index + 1 < len(words):
            if word == "-t":
                fs_type = words[index + 1]
            else:
                options.extend(words[index + 1].split(","))
            index += 2
            continue
        if word.startswith("-o") and len(word) > 2:  # -onoatime,compress=zstd
            options.extend(word[2:].split(","))
            index += 1
            continue
        if not word.startswith("-"):
            positional.append(word)
        index += 1
    if not positional and options and "remount" not in options:
        positional = ["", ""]  # `3.  mount -o lazytime,noatime` in a list of steps: its options
    elif len(positional) != 2 or not (
        positional[0].startswith("/") or _IMAGE_FILE_RE.fullmatch(positional[0])
    ):
        return None
    # `-o loop` makes mount set up the loop device fslab makes itself; an option the shell
    # fills in (`mb_optimize_scan=$scan` in a loop) is the sweep's, not the reporter's
    options = [
        o for o in options if o and o != "loop" and not o.startswith("loop=") and "$" not in o
    ]
    return FilesystemFact(
        type=fs_type if fs_type in FS_TYPES else "",
        source=report.line(number),
        how="mount",
        device=positional[0],
        mountpoint=positional[1],
        mount_options=tuple(options),
    )


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=False)
    except ValueError:
        return text.split()


def _options_listed(line: str, report: ReportText, number: int) -> FilesystemFact | None:
    """A harness's list of its settings: "- mkfs parameters -f -d agcount=8", "- mount
    options inode64,delaylog,logbsize=262144,nobarrier for the most part"."""
    listed = _OPTIONS_LISTED_RE.match(line)
    if listed is None:
        return _options_under_heading(line, report, number)
    fs_type = _fs_named(line) or ""
    if listed.group(1).lower() == "mkfs":
        words = [w for w in _words(listed.group(2)) if w not in _FORCE_FLAGS]
        return FilesystemFact(fs_type, report.line(number), "mkfs", mkfs_options=tuple(words))
    options = tuple(o for o in listed.group(3).split(",") if o)
    return FilesystemFact(fs_type, report.line(number), "mount", mount_options=options)


def _options_under_heading(line: str, report: ReportText, number: int) -> FilesystemFact | None:
    """A heading "BTRFS options" (or "Mount options:") alone on its line, the options on
    the next as /proc/mounts shows them: "rw,noatime,compress=lzo,ssd,subvol="."""
    heading = _OPTIONS_HEADING_RE.match(line)
    below = report.lines[number] if number < len(report.lines) else ""
    if heading is None or not _OPTIONS_ROW_RE.match(below):
        return None
    options = tuple(o for o in below.strip().split(",") if o and not _MOUNTS_DEFAULTS.match(o))
    fs_type = (heading.group(1) or "").lower()
    return FilesystemFact(fs_type, report.line(number + 1), "mount", mount_options=options)


def _said_in_prose(line: str, report: ReportText, number: int) -> FilesystemFact | None:
    """ "xfs was formatted with mkfs.xfs -d agcount=1 -l size=128m,version=2." and "xfs
    was mounted -o logbsize=256k": a sentence that quotes the options, not a device."""
    made = _PROSE_MKFS_RE.search(line)
    if made:
        program, rest = made.group(1), made.group(2).rstrip(".")  # the sentence's stop
        fs_type = program.removeprefix("mkfs.") if "." in program else _fs_named(line) or ""
        words = [w for w in _words(rest) if w not in _FORCE_FLAGS]
        if fs_type in FS_TYPES:
            return FilesystemFact(fs_type, report.line(number), "mkfs", mkfs_options=tuple(words))
    mounted = _PROSE_MOUNT_RE.search(line)
    fs_type = _fs_named(line) or ""
    if mounted and fs_type in FS_TYPES and fs_type == _fs_named(line[: mounted.start() + 1]):
        options = tuple(o for o in mounted.group(1).split(",") if o)
        return FilesystemFact(fs_type, report.line(number), "mount", mount_options=options)
    return None


def _fs_named(text: str) -> str | None:
    match = _PROSE_FS_RE.search(text)
    return match.group(1).lower() if match else None


def _prose_mentions(report: ReportText) -> Iterator[FilesystemFact]:
    """The first mention of each filesystem the report names ("on XFS, performance is...")."""
    seen: set[str] = set()
    for number, line in report.numbered():
        parameter = _PARAMETER_FS_RE.match(line)
        found = (
            [parameter.group(1)] if parameter else [m.lower() for m in _PROSE_FS_RE.findall(line)]
        )
        journal = ("-O", "^has_journal") if parameter and parameter.group(2) else ()
        for fs_type in found:
            if fs_type not in seen or journal:  # how it was made, after the subject named it
                seen.add(fs_type)
                how: FilesystemHow = "parameters" if parameter else "prose"
                yield FilesystemFact(fs_type, report.line(number), how, mkfs_options=journal)


def _typed(facts: list[FilesystemFact], questions: list[QuestionFact]) -> list[FilesystemFact]:
    """Give a mount without -t the type of the filesystem last made on its device."""
    typed: list[FilesystemFact] = []
    made: dict[str, str] = {}
    named = list(dict.fromkeys(f.type for f in facts if f.how == "prose" and f.type))
    expanded: list[FilesystemFact] = []
    for fact in facts:
        if fact.type == EVERY_FS:
            expanded += [FilesystemFact(**{**fact.__dict__, "type": t}) for t in named]
        else:
            expanded.append(fact)
    facts = expanded
    for fact in sorted(facts, key=lambda f: f.source.number):
        if not fact.type and fact.how == "mkfs":  # options in a variable, no mkfs line
            fact = FilesystemFact(**{**fact.__dict__, "type": _nearest_prose_type(facts, fact)})
        if fact.how == "mkfs":
            made[fact.device] = fact.type
        if not fact.type and fact.how == "mount":
            inferred = made.get(fact.device) or _nearest_prose_type(facts, fact)
            if not inferred:
                questions.append(
                    QuestionFact(
                        item="mount",
                        question="the mount names no filesystem type and no mkfs precedes it",
                        assumed="the filesystem the report names first",
                        source=fact.source,
                    )
                )
            fact = FilesystemFact(**{**fact.__dict__, "type": inferred or ""})
        typed.append(fact)
    return typed


def _nearest_prose_type(facts: list[FilesystemFact], mount: FilesystemFact) -> str:
    same_line = [f.type for f in facts if f.source.number == mount.source.number and f.type]
    if same_line:
        return same_line[0]
    earlier = [f for f in facts if f.type and f.source.number <= mount.source.number]
    return earlier[-1].type if earlier else ""


def reporters(facts: list[FilesystemFact], fs_type: str) -> list[FilesystemFact]:
    """The facts of the reporter's filesystem of this type: a mount of another device at
    another mount point (a second user's array, shown by mount(8)) is someone else's
    filesystem, not more options of this one."""
    of_type = [fs for fs in facts if fs.type == fs_type]
    first = next((fs for fs in of_type if fs.how == "mount" and fs.device and fs.mountpoint), None)
    if first is None:
        return of_type
    return [
        fs
        for fs in of_type
        if not (
            fs.how == "mount"
            and fs.device
            and fs.mountpoint
            and fs.device != first.device
            and fs.mountpoint != first.mountpoint
        )
    ]
