"""The variable as configurations: what the reporter changed in how the filesystem was
made or mounted, or the filesystem itself.

An mkfs option repeated with another value, an ext4 feature with and without, the
filesystem made again otherwise, a mount option with and without, in braces, as a
variable, under a heading or a row per value, mounted again with another value, changed
by a remount (the thread's workaround), and filesystems compared on one device or in a
results table. Each becomes a SweepFact with the line it came from; configwrite.py makes
one configuration per value. sweeps.py reads the workload's own variables.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import pairwise

from fslab.reproduce import shell
from fslab.reproduce.facts import FilesystemFact, Line, SweepFact
from fslab.reproduce.text import ReportText, without_prompt


def config_sweeps(report: ReportText, filesystems: list[FilesystemFact]) -> Iterator[SweepFact]:
    """The mkfs and mount variables the report shows, in the order they are trusted."""
    yield from _mkfs_looped(report, filesystems)
    yield from _mkfs_repeats(report, filesystems)
    yield from _mkfs_remade(filesystems)
    yield from _feature_toggle(report, filesystems)
    yield from _mount_with_without(report, filesystems)
    yield from _mount_option_variable(report)
    yield from _mount_option_braces(report)
    yield from _mount_value_rows(report)
    yield from _mount_headings(report)
    yield from _mounts_differing(filesystems)
    yield from _remount_change(report, filesystems)


def filesystem_variable(report: ReportText, filesystems: list[FilesystemFact]) -> SweepFact | None:
    """The filesystem itself, when the report varies nothing else: each made in turn on
    one device, or a results table with a row per filesystem."""
    return _filesystems_made(filesystems) or _filesystem_rows(report)


_WITH_WITHOUT_RE = re.compile(
    r"\bmounted\s+with(?:out)?\s+([a-z_]+)\s+and\s+with(?:out)?\s+it\b|"
    r"\bwith\s+and\s+without\s+(?:the\s+)?([a-z_]+)\s+mount\s+option\b|"
    # an option's own name, with its `_` ("ext4 with and without dioread_nolock"), or a
    # bare one no other setting is called
    r"\bwith\s+and\s+without\s+(?:the\s+)?(?:-o\s+)?"
    r"([a-z]+_[a-z_]+|discard|lazytime|iversion|nobarrier|noatime)\b(?!\s*\()",
    re.I,
)


_WITH_BOTH_RE = re.compile(
    r"\bmounted\s+(?:with\s+)?([a-z_]+)=(\w+)\s+(?:and|or|against|vs\.?)\s+(?:with\s+)?"
    r"(?:\1)?=(\w+)"
)


# "without journal_async_commit"; not "without max_inline=64K", a value of an option
_WITHOUT_OPTION_RE = re.compile(r"\bwithout\s+([a-z]+_[a-z_]+)\b(?!=)", re.I)


_FS_ROW_RE = re.compile(r"^\s*(btrfs|xfs|ext[234])(?:\s+|\s*\|\s*)\d[\d.,]*\s*[A-Za-z/%]*", re.I)


# ext4 features as reports name them in prose, and mke2fs -O's name for each
EXT4_FEATURE_NAMES = {
    "fast commit": "fast_commit",
    "fast_commit": "fast_commit",
    "bigalloc": "bigalloc",
    "inline data": "inline_data",
    "inline_data": "inline_data",
    "metadata checksum": "metadata_csum",
    "metadata_csum": "metadata_csum",
}


_MOUNT_OPTION_LIST = r"[a-z_]+(?:=[\w:.]+)?(?:,[a-z_]+(?:=[\w:.]+)?)*"


_MOUNT_HEADING_RE = re.compile(
    r"^\s*(?:btrfs|xfs|ext4)\s+(?:mounted\s+)?with\s+(default\s+mount\s+options|defaults|"
    + _MOUNT_OPTION_LIST
    + r")\s*:?\s*$"
    # a label over each run's results: "  Mount option: nodatasum", "- mount options: defaults"
    + r"|^\s*(?:[-*]\s+)?mount\s+options?\s*:\s*(default|defaults|"
    + _MOUNT_OPTION_LIST
    + r")(?:\s+\([^)]*\))?\s*$",
    re.I,
)


_OPTION_SET_RE = re.compile(r"\b([a-z][a-z_]{2,})=\w+")


def _filesystems_made(filesystems: list[FilesystemFact]) -> SweepFact | None:
    """Each filesystem made in turn on the same device (`mkfs.btrfs /dev/md/pex`, later
    `mkfs.ext4 ... /dev/md/pex`): the filesystem is what the report varies."""
    made = [fs for fs in filesystems if fs.how == "mkfs" and fs.type]
    devices = {fs.device for fs in made}
    types = tuple(dict.fromkeys(fs.type for fs in made))
    if len(types) < 2 or len(devices) > 1:
        return None
    second = next(fs for fs in made if fs.type == types[1])
    return SweepFact("filesystem", types, "the report makes each on the same device", second.source)


def _filesystem_rows(report: ReportText) -> SweepFact | None:
    """A results table with a row per filesystem ("XFS    16.95 MB/s", "Ext3   22.92
    MB/s"): the filesystem is what the report varies (the spec compares the ones fslab
    makes as configurations of their own)."""
    rows: list[tuple[int, str]] = []
    for number, line in report.numbered():
        match = _FS_ROW_RE.match(line)
        if match is None:
            continue
        if rows and number - rows[-1][0] > 2:  # a table's rows sit together
            rows = []
        rows.append((number, match.group(1).lower()))
        names = tuple(dict.fromkeys(name for _, name in rows))
        if len(rows) >= 2 and len(names) >= 2 and len(names) == len(rows):
            following = (
                _FS_ROW_RE.match(report.lines[number]) if number < len(report.lines) else None
            )
            if following is None:
                return SweepFact(
                    "filesystem",
                    names,
                    "the report's results have a row per filesystem",
                    report.line(rows[0][0]),
                )
    return None


def _mkfs_looped(report: ReportText, filesystems: list[FilesystemFact]) -> Iterator[SweepFact]:
    """`for p in 0 1; do mkfs.xfs ... -n parent=$p`: a sweep of the option the loop sets."""
    loops = shell.find_loops(report)
    for fs in (f for f in filesystems if f.how == "mkfs"):
        around = {loop.variable: loop for loop in shell.enclosing(loops, fs.source.number)}
        for flag, setting in pairwise(fs.mkfs_options):
            key, sep, value = setting.rpartition("=") if "=" in setting else ("", "", setting)
            variable = re.fullmatch(r"\$\{?(\w+)\}?", value)
            if not flag.startswith("-") or variable is None or variable.group(1) not in around:
                continue
            loop = around[variable.group(1)]
            axis = f"mkfs {flag} {key}" if sep else f"mkfs {flag}"
            yield SweepFact(axis, loop.values, f"the report's loop over {value}", fs.source)
            return


def _mkfs_repeats(report: ReportText, filesystems: list[FilesystemFact]) -> Iterator[SweepFact]:
    """`mkfs.xfs ... -n parent=0`, later "repeats it with -n parent=1": a sweep of it."""
    made = [fs for fs in filesystems if fs.how == "mkfs"]
    if named := _flag_values_named(report, made, filesystems):
        yield named
        return
    for fs in made:
        options = list(fs.mkfs_options)
        for flag, setting in pairwise(options):
            key, sep, value = setting.partition("=")
            if not (flag.startswith("-") and sep and re.fullmatch(r"\w+", key)):
                continue
            pattern = re.compile(rf"{re.escape(flag)}\s+{re.escape(key)}=([\w.,=]+)")
            for number, line in report.numbered():
                match = pattern.search(line)
                if number > fs.source.number and match and match.group(1) != value:
                    yield SweepFact(
                        f"mkfs {flag} {key}",
                        (value, match.group(1)),
                        f"the report repeats the run with {match.group(0)}",
                        report.line(number),
                    )
                    return


def _flag_values_named(
    report: ReportText, made: list[FilesystemFact], filesystems: list[FilesystemFact]
) -> SweepFact | None:
    """ "made with mkfs -d raid0 and with -d raid1": values of one of the reporter's mkfs
    flags (a word, not key=value) that a sentence about mkfs names; the reporter's own
    value first, unless the sentence names two others (then those are the comparison)."""
    flags = dict.fromkeys(
        (flag, own)
        for fs in made
        for flag, own in pairwise(fs.mkfs_options)
        if re.fullmatch(r"-[A-Za-z]", flag) and re.fullmatch(r"\w+", own)
    )
    if not flags:
        return None
    commands = {f.source.number for f in filesystems if f.how in ("mkfs", "mount")}
    sentences = [(n, x) for n, x in report.numbered() if "mkfs" in x and n not in commands]
    for flag, own in flags:
        pattern = re.compile(rf"(?<!\S){re.escape(flag)}\s+(\w+)\b")
        for number, line in sentences:
            others = [v for v in dict.fromkeys(pattern.findall(line)) if v != own]
            if others:
                values = tuple(others) if len(others) > 1 else (own, *others)
                return SweepFact(
                    f"mkfs {flag}",
                    values,
                    f"the report names mkfs {flag} {' and '.join(values)}",
                    report.line(number),
                )
    return None


def _feature_toggle(report: ReportText, filesystems: list[FilesystemFact]) -> Iterator[SweepFact]:
    """An ext4 feature with and without: "Without Fast Commit: 1501.2 files/sec" over
    "With Fast commits: 3055", or the reporter's `-O ^has_journal,bigalloc` against a
    filesystem "made without "bigalloc"". One axis, `mkfs -O FEATURE`, on and off."""
    own = {
        f.lstrip("^"): "off" if f.startswith("^") else "on"
        for fs in filesystems
        if fs.how == "mkfs" and fs.type == "ext4"
        for flag, value in pairwise(fs.mkfs_options)
        if flag == "-O"
        for f in value.split(",")
    }
    named = {**{f: f for f in own}, **EXT4_FEATURE_NAMES}
    if not own and not re.search(r"\bext4\b", report.joined, re.I):
        return
    for phrase, feature in named.items():
        spelled = re.escape(phrase).replace(r"\ ", r"[\s_-]")
        without = re.compile(rf"\bwithout\s+(?:the\s+)?[\"']?{spelled}s?\b", re.I)
        with_ = re.compile(rf"(?<![\w-])with\s+(?:the\s+)?[\"']?{spelled}s?\b", re.I)
        off = next((n for n, line in report.numbered() if without.search(line)), None)
        on = next((n for n, line in report.numbered() if with_.search(line)), None)
        if off is None or (on is None and feature not in own):
            continue
        first = own.get(feature) or ("off" if on is None or off < on else "on")
        values = (first, "on" if first == "off" else "off")
        yield SweepFact(
            f"mkfs -O {feature}",
            values,
            f"the report runs with and without {phrase}",
            report.line(off),
        )
        return


def _mkfs_remade(filesystems: list[FilesystemFact]) -> Iterator[SweepFact]:
    """The reporter's filesystem made again with other options (`mkfs.btrfs -d raid5 ...`,
    then `mkfs.btrfs -d raid6 ...`): a sweep of the whole option lists."""
    made = [fs for fs in filesystems if fs.how == "mkfs"]
    if not made:
        return
    same = [fs for fs in made if fs.type == made[0].type]
    values = tuple(dict.fromkeys(" ".join(fs.mkfs_options) for fs in same))
    if len(values) > 1:
        second = next(fs for fs in same if " ".join(fs.mkfs_options) == values[1])
        yield SweepFact(
            "mkfs_options", values, "the report made its filesystem again otherwise", second.source
        )


# `mount ... -o $OPT`: the -o is found after the word mount (no `.*` to backtrack over)
_MOUNT_WORD_RE = re.compile(r"\bmount\s")


_MOUNT_VARIABLE_RE = re.compile(r"\s-o\s*(\S*\$(?:\{(\w+)\}|(\w+))\S*)")


def _mount_option_variable(report: ReportText) -> Iterator[SweepFact]:
    """`mount -o $MOUNT_OPT`, the variable set to one option and then another, or
    `mount -o compress=zstd:$level` inside a loop over levels: a sweep of the option."""
    loops = shell.find_loops(report)
    for number, raw in report.numbered():
        line = without_prompt(raw)
        word = _MOUNT_WORD_RE.search(line)
        match = _MOUNT_VARIABLE_RE.search(line, word.end() - 1) if word else None
        if match is None:
            continue
        written, name = match.group(1).rstrip(";,"), match.group(2) or match.group(3)
        around = [x for x in shell.enclosing(loops, number) if x.variable == name]
        values = list(around[-1].values) if around else shell.all_assignments(report, name)
        values = [v for v in values if v.strip("'\"")]  # MOUNT_OPT="" clears it, no option
        if len(values) < 2:
            continue
        options = [re.sub(rf"\$(?:\{{{name}\}}|{name}\b)", v, written) for v in values]
        yield SweepFact(
            "mount_options",
            tuple(dict.fromkeys(options)),
            f"the report mounts with -o {written} for each value of ${name}",
            report.line(number),
        )
        return


_BRACED_OPTION_RE = re.compile(r"-o\s*([a-z_-]+)=\{([\w:.,\s-]+)\}")


def _mount_option_braces(report: ReportText) -> Iterator[SweepFact]:
    """`Run for each of -o compress-force={none, lzo, zlib, zstd}`: one mount per value."""
    for number, line in report.numbered():
        match = _BRACED_OPTION_RE.search(line)
        if match is None:
            continue
        values = [v.strip() for v in match.group(2).split(",") if v.strip()]
        if len(values) >= 2:
            yield SweepFact(
                "mount_options",
                tuple(f"{match.group(1)}={v}" for v in values),
                f"the report runs -o {match.group(0)[2:].strip()}",
                report.line(number),
            )
            return


def _mount_value_rows(report: ReportText) -> Iterator[SweepFact]:
    """A result per value of a mount option the prose sets ("set logbsize=256k by hand
    on the mount command line"), each row led by the value: "32k  logbsize (default):
    3027.4 files/sec", "256k logbsize (...): 4768.4 files/sec"."""
    names = dict.fromkeys(
        name
        for _, line, _ in report.wrapped()  # "set logbsize=256k by hand" / "on the mount"
        if "mount" in line.lower()
        for name in _OPTION_SET_RE.findall(line)
    )
    for name in names:
        row = re.compile(rf"^\s*([\w.]+)\s+{re.escape(name)}\b[^:\n]*:\s*\d")
        rows = [(n, m.group(1)) for n, line in report.numbered() if (m := row.match(line))]
        values = tuple(dict.fromkeys(f"{name}={value}" for _, value in rows))
        if len(values) > 1:
            yield SweepFact(
                "mount_options",
                values,
                f"the report's results have a row per {name}",
                report.line(rows[0][0]),
            )
            return


def _mounts_differing(filesystems: list[FilesystemFact]) -> Iterator[SweepFact]:
    """The filesystem mounted again with one option's value changed (`-o
    ssd,max_inline=2048`, later `-o ssd,max_inline=3072`): a sweep of that option."""
    mounts = [fs for fs in filesystems if fs.how == "mount" and fs.mount_options]
    for fs_type in dict.fromkeys(fs.type for fs in mounts):
        same = [fs for fs in mounts if fs.type == fs_type]
        sets = [dict(o.partition("=")[::2] for o in fs.mount_options) for fs in same]
        keys = {k for s in sets for k in s}
        changed = [k for k in keys if len({s.get(k) for s in sets}) > 1]
        if len(changed) != 1 or any(changed[0] not in s for s in sets):
            continue
        key = changed[0]
        values = tuple(dict.fromkeys(f"{key}={s[key]}" if s[key] else key for s in sets))
        second = next(
            fs for fs, s in zip(same, sets, strict=True) if f"{key}={s[key]}" != values[0]
        )
        yield SweepFact(
            "mount_options", values, "the report mounts again with another value", second.source
        )
        return


def _mount_headings(report: ReportText) -> Iterator[SweepFact]:
    """Results under a heading per set of mount options: "BTRFS with default mount
    options", "BTRFS with nossd,space_cache=v2", "BTRFS with nodatacow"."""
    found = [
        (n, "defaults" if value.lower().startswith("default") else value)
        for n, line in report.numbered()
        if (m := _MOUNT_HEADING_RE.match(line)) and (value := m.group(1) or m.group(2))
    ]
    values = tuple(dict.fromkeys(value for _, value in found))
    if len(values) > 1:
        yield SweepFact(
            "mount_options",
            values,
            "the report's results have a heading per mount option set",
            report.line(found[0][0]),
        )


def _mount_with_without(
    report: ReportText, filesystems: list[FilesystemFact]
) -> Iterator[SweepFact]:
    """'mounted with X and without it'; 'mounted with X=0 and X=1'; or 'Without
    journal_async_commit:' over one result and 'with journal_async_commit' by another
    (an option's own name, with its `_`)."""
    for number, line, own in report.wrapped():
        match = _WITH_WITHOUT_RE.search(line)
        if match and match.start() < own:
            option = match.group(1) or match.group(2) or match.group(3)
            yield SweepFact(
                "mount_options",
                (f"(no {option})", option),
                f'"{match.group(0)}"',
                Line(number, report.lines[number - 1]),
            )
            return
    for number, line, own in report.wrapped():
        both = _WITH_BOTH_RE.search(line)
        if both and both.start() < own:  # "mounted with mb_optimize_scan=0 and =1"
            key, first, second = both.group(1), both.group(2), both.group(3)
            yield SweepFact(
                "mount_options",
                (f"{key}={first}", f"{key}={second}"),
                f'"{both.group(0)}"',
                report.line(number),
            )
            return
    tried: set[str] = set()
    for number, line, own in report.wrapped():
        without = _WITHOUT_OPTION_RE.search(line)
        if without is None or without.start() >= own or without.group(1) in tried:
            continue
        option = without.group(1)
        tried.add(option)  # each option's "with" is looked for once
        if re.search(rf"\bwith\s+{option}\b", report.joined, re.I):
            yield _without_and_with(option, report.line(number))
            return
    yield from _own_option_with_without(report, filesystems)


def _own_option_with_without(
    report: ReportText, filesystems: list[FilesystemFact]
) -> Iterator[SweepFact]:
    """One of the reporter's own mount options said without and with ("once without and
    once with the option", "96.3k IOPS without iversion, 96.2k with")."""
    own = dict.fromkeys(
        o for fs in filesystems if fs.how == "mount" for o in fs.mount_options if "=" not in o
    )
    for option in own:
        spelled = rf"(?:the\s+)?[\"']?(?:-o\s+)?{re.escape(option)}\b"
        without = re.search(rf"\bwithout\s+{spelled}", report.joined, re.I)
        if without and re.search(rf"(?<![\w-])with\s+{spelled}", report.joined, re.I):
            yield _without_and_with(option, report.line(report.offset_to_line(without.start())))
            return


def _without_and_with(option: str, source: Line) -> SweepFact:
    return SweepFact(
        "mount_options", (f"(no {option})", option), f"results without {option} and with it", source
    )


# `mount -o remount,stripe=0 /data1`, or a root filesystem's `rootflags="mb_optimize_scan=0"`:
# an option's value changed on the mounted filesystem, a workaround the thread tries
_REMOUNT_RE = re.compile(
    r"\bmount\s+(?:\S+\s+)*?-o\s*['\"]?remount,([\w=:.,]+)|\brootflags=['\"]?([\w=:.,]+)"
)


def _remount_change(report: ReportText, filesystems: list[FilesystemFact]) -> Iterator[SweepFact]:
    """An option set to another value by a remount: the reporter's mount against it. The
    reporter's value is their mount's; a 0/1 switch without one was the other value."""
    tried: set[str] = set()
    for number, raw in report.numbered():
        match = _REMOUNT_RE.search(without_prompt(raw))
        if match is None:
            continue
        for option in (match.group(1) or match.group(2)).split(","):
            if option in tried:  # a remount repeated is read once
                continue
            tried.add(option)
            fact = (
                _reset(report, filesystems, option, number)
                if "=" in option
                else _switched(report, option, number)
            )
            if fact is not None:
                yield fact
                return


def _reset(
    report: ReportText, filesystems: list[FilesystemFact], option: str, number: int
) -> SweepFact | None:
    """`remount,stripe=0` against the reporter's stripe=32745."""
    key, _, value = option.partition("=")
    had = next((o for fs in filesystems for o in fs.mount_options if o.startswith(f"{key}=")), None)
    if had is None and value in ("0", "1"):
        had = f"{key}={1 - int(value)}"
    if had == option:
        return None
    return SweepFact(
        "mount_options",
        (had or f"(no {option})", option),
        f"the report remounts with {option}",
        report.line(number),
    )


def _switched(report: ReportText, option: str, number: int) -> SweepFact | None:
    """A bare option remounted (`remount,delalloc`) whose opposite the report names
    (nodelalloc): the reporter ran with the opposite."""
    opposite = option[2:] if option.startswith("no") else f"no{option}"
    if option in ("ro", "rw") or not re.search(rf"\b{re.escape(opposite)}\b", report.joined):
        return None
    return SweepFact(
        "mount_options",
        (opposite, option),
        f"the report remounts with {option}, against its {opposite}",
        report.line(number),
    )
