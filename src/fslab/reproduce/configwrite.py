"""The configurations of a written spec: [[filesystems]] from the report's setup.

The reporter's setup comes first, then the obvious counterpart (another
filesystem the report names, else the filesystem's defaults when the
reporter gave options), then what the report's own remedy names (a bigger
journal). A report that changed a mkfs or mount option between its runs
(`-n parent=0`, then `-n parent=1`; "with discard and without") is about
that change: its configurations are the reporter's setup with each value,
in place of the defaults. ext4 gets fslab's lazy-init options, said in a
comment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import tomlkit
from tomlkit.items import Table

from fslab.reproduce.draft import Draft
from fslab.reproduce.facts import FilesystemFact, LeverFact, Line, QuestionFact, SweepFact
from fslab.reproduce.filesystems import reporters
from fslab.reproduce.tomlitems import wrap

LAZY_INIT = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
LAZY_INIT_WHY = (
    "fslab adds -E lazy_itable_init=0,lazy_journal_init=0 so ext4's background "
    "zeroing does not run during the measurement"
)
BIG_JOURNAL_MIB = 1024


@dataclass
class Config:
    label: str
    type: str
    description: str
    mkfs_options: list[str] = field(default_factory=list)
    mount_options: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)


def configurations(draft: Draft) -> list[Config]:
    facts = draft.facts
    types = facts.filesystem_types()
    if not types:
        types = ["ext4"]
        draft.questions.append(QuestionFact("filesystem", "the report names no filesystem", "ext4"))
    reporter = types[0]
    configs: list[Config] = []
    for fs_type in types:
        mkfs, mount, lines = _options_of(draft, fs_type)
        where = f" (line {', '.join(map(str, lines))})" if lines else ""
        own = fs_type == reporter
        label = f"{fs_type}-reported" if own and (mkfs or mount) else fs_type
        description = (
            "the reporter's setup"
            if own
            else "the other filesystem the report names, same workload"
        ) + where
        configs.append(_config(label, fs_type, description, mkfs, mount))
    varied = _option_sweep(draft, configs[0])
    if varied:
        if len(configs) > 1:  # the report's variable is the option, not the filesystem
            others = ", ".join(c.type for c in configs[1:])
            draft.questions.append(
                QuestionFact(
                    "filesystems",
                    f"the report also names {others}; its variable is an option of the "
                    f"reporter's {reporter}",
                    f"{others} left out (add a [[filesystems]] table to compare it)",
                )
            )
        configs[:] = varied
    elif len(types) == 1 and (_user_mkfs(configs[0]) or configs[0].mount_options):
        configs.append(
            _config(f"{reporter}-default", reporter, "counterpart: mkfs and mount defaults", [], [])
        )
    _with_what_options_need(draft, configs)
    for lever in facts.levers:
        if lever.lever == "bigger-journal" and reporter == "ext4":
            configs.append(_bigger_journal(draft, configs[0], lever))
    return configs


# "large the journal size from 128MB to 2GB", "a journal of 1G": the size the remedy names
_JOURNAL_TO_RE = re.compile(r"\b(?:to|of)\s+(\d+(?:\.\d+)?)\s*([MG])i?B?\b", re.I)


def _bigger_journal(draft: Draft, base: Config, lever: LeverFact) -> Config:
    """The reporter's ext4 again with the bigger journal the report names as a remedy
    (its size when the line gives one), in place of the reporter's own -J size."""
    named = _JOURNAL_TO_RE.search(lever.source.text)
    if named is not None:
        mib = int(float(named.group(1)) * (1024 if named.group(2).upper() == "G" else 1))
    else:
        mib = BIG_JOURNAL_MIB
        draft.questions.append(
            QuestionFact(
                "journal size",
                "the report names a bigger journal but no size",
                f"{mib} MiB (mkfs.ext4 -J size={mib})",
                lever.source,
            )
        )
    mkfs = _user_mkfs(base)
    kept = [
        word
        for i, word in enumerate(mkfs)
        if not (word == "-J" and mkfs[i + 1 : i + 2] and mkfs[i + 1].startswith("size="))
        and not (i and mkfs[i - 1] == "-J" and word.startswith("size="))
    ]
    size = f"{mib // 1024}g" if mib % 1024 == 0 else f"{mib}m"
    return _config(
        f"ext4-journal{size}",
        "ext4",
        f'the remedy the report names: "{lever.text}" (line {lever.source.number})',
        [*kept, "-J", f"size={mib}"],
        base.mount_options,
    )


MAX_OPTION_VALUES = 5
"""Configurations one changed option's values become (first, last and evenly between)."""


def _option_sweep(draft: Draft, reporter: Config) -> list[Config]:
    """The reporter's configuration once per value of the mkfs or mount option the report
    changed between its runs ([] when it changed none)."""
    fact = next(
        (f for f in draft.facts.sweeps if f.axis.startswith("mkfs ") or f.axis == "mount_options"),
        None,
    )
    if fact is None:
        return _remade(draft, reporter)
    base = _user_mkfs(reporter)
    configs: list[Config] = []
    values = list(fact.values)
    if len(values) > MAX_OPTION_VALUES:  # first, last and evenly between
        step = (len(values) - 1) / (MAX_OPTION_VALUES - 1)
        values = [values[round(i * step)] for i in range(MAX_OPTION_VALUES)]
        draft.questions.append(
            QuestionFact(
                "configurations",
                f"the report ran {len(fact.values)} values of its option, each a "
                "configuration here",
                f"{MAX_OPTION_VALUES} of them: {', '.join(values)}",
                fact.source,
            )
        )
    for value in values:
        mkfs, mount, name, shown = _with_value(fact, value, base, reporter.mount_options)
        label = re.sub(r"[^A-Za-z0-9_.+-]+", "", f"{reporter.type}-{name}")[:64]
        first = not configs
        description = (
            f"the reporter's setup, {shown}" if first else f"the report's change: {shown}"
        ) + f" (line {fact.source.number})"
        configs.append(_config(label, reporter.type, description, mkfs, mount))
    if len({c.label for c in configs}) < len(configs):
        return []
    return configs


def _remade(draft: Draft, reporter: Config) -> list[Config]:
    """The reporter's filesystem once per mkfs command that made it otherwise, each with
    the options one scratch device set can take ([] when it was made one way)."""
    fact = next((f for f in draft.facts.sweeps if f.axis == "mkfs_options"), None)
    if fact is None:
        return []
    made = {
        " ".join(fs.mkfs_options): fs
        for fs in reversed(draft.facts.filesystems)
        if fs.how == "mkfs" and fs.type == reporter.type
    }
    configs: list[Config] = []
    for value in fact.values:
        fs = made[value]
        mkfs = _buildable(draft, fs, fs.mkfs_options)
        mount = _mounted_after(draft, fs)
        mount = reporter.mount_options if mount is None else mount
        name = "-".join(w.lstrip("-") for w in mkfs) or "default"
        label = re.sub(r"[^A-Za-z0-9_.+-]+", "", f"{reporter.type}-{name}")[:64]
        shown = f"mkfs {' '.join(mkfs)}" if mkfs else "mkfs defaults"
        description = (
            f"the reporter's setup, {shown}" if not configs else f"the report's change: {shown}"
        ) + f" (line {fs.source.number})"
        configs.append(_config(label, reporter.type, description, mkfs, mount))
        spans = 1 + len(fs.extra_devices)
        if draft.devices > 1 and spans != draft.devices:
            draft.questions.append(
                QuestionFact(
                    "devices",
                    f"this mkfs spans {spans} devices, the report's largest {draft.devices}",
                    f"{label} on {draft.devices} devices like the others (target.devices is "
                    "one count for every configuration)",
                    fs.source,
                )
            )
    if len({c.label for c in configs}) < len(configs):
        return []
    return configs


def _mounted_after(draft: Draft, made: FilesystemFact) -> list[str] | None:
    """The options of the mount that follows this mkfs (before the next mkfs): a report
    that remakes its filesystem mounts each one its own way. None when none follows."""
    facts = [f for f in draft.facts.filesystems if f.type == made.type]
    after = [f for f in facts if f.source.number > made.source.number]
    following = next((f for f in after if f.how == "mkfs"), None)
    mount = next(
        (
            f
            for f in after
            if f.how == "mount" and (following is None or f.source.number < following.source.number)
        ),
        None,
    )
    if mount is None:
        return None
    taken = _still_taken(draft, made.type, mount.mount_options, mount.source)
    return _no_paths(draft, taken, mount.source)


def _with_value(
    fact: SweepFact, value: str, mkfs: list[str], mount: list[str]
) -> tuple[list[str], list[str], str, str]:
    """(mkfs options, mount options, a label part, in words) with the changed option set
    to `value`."""
    if fact.axis == "mount_options":
        option = value.removeprefix("(no ").removesuffix(")")
        # stripe=0 takes the place of the reporter's stripe=N, delalloc of nodelalloc
        key = option.partition("=")[0]
        kept = [
            o
            for o in mount
            if o.partition("=")[0] != key and option not in (f"no{o}", o.removeprefix("no"))
        ]
        if value.startswith("(no "):
            return list(mkfs), kept, f"no{option}", f"mounted without {option}"
        added = option.split(",")  # "nossd,space_cache=v2": a set of options, one value
        kept = [o for o in kept if o.partition("=")[0] not in {a.partition("=")[0] for a in added}]
        return list(mkfs), [*kept, *added], option, f"mounted with {option}"
    _, flag, *keyed = fact.axis.split(" ", 2)
    if flag == "-O" and value in ("on", "off"):  # an ext4 feature, with and without
        feature = keyed[0]
        return (
            _with_feature(mkfs, feature, value == "on"),
            list(mount),
            f"{feature}-{value}",
            (f"mkfs -O {feature}" if value == "on" else f"mkfs without {feature}"),
        )
    if not keyed:  # `-d raid0` against `-d raid1`: the flag's whole value
        options = list(mkfs)
        at = next((i for i in range(len(options) - 1) if options[i] == flag), None)
        if at is None:
            options += [flag, value]
        else:
            options[at + 1] = value
        return options, list(mount), f"{flag.lstrip('-')}{value}", f"mkfs {flag} {value}"
    key = keyed[0]
    setting = f"{key}={value}"
    shown = f"mkfs {flag} {setting}"
    options = list(mkfs)
    for index in range(len(options) - 1):
        if options[index] == flag and options[index + 1].partition("=")[0] == key:
            options[index + 1] = setting
            return options, list(mount), f"{key}{value}", shown
    return [*options, flag, setting], list(mount), f"{key}{value}", shown


# features mke2fs turns on by default (its ext4 defaults): off is `^feature`
_EXT4_DEFAULT_FEATURES = frozenset(
    (
        *("has_journal", "extent", "flex_bg", "metadata_csum", "64bit", "dir_index"),
        *("huge_file", "dir_nlink", "extra_isize", "sparse_super", "large_file"),
        *("filetype", "resize_inode", "ext_attr"),
    )
)


def _with_feature(mkfs: list[str], feature: str, on: bool) -> list[str]:
    """mkfs options with an ext4 feature set on or off in one -O list (and -C dropped
    with bigalloc off: a cluster size needs it)."""
    options: list[str] = []
    features: list[str] = []
    words = iter(mkfs)
    for word in words:
        if word == "-O":
            features += [f for f in next(words, "").split(",") if f.lstrip("^") != feature]
        elif word == "-C" and not on and feature == "bigalloc":
            next(words, "")
        else:
            options.append(word)
    if on:
        features.append(feature)
    elif feature in _EXT4_DEFAULT_FEATURES:
        features.append(f"^{feature}")
    return [*options, "-O", ",".join(features)] if features else options


def _options_of(draft: Draft, fs_type: str) -> tuple[list[str], list[str], list[int]]:
    mkfs: list[str] = []
    mount: list[str] = []
    lines: list[int] = []
    for fs in reporters(draft.facts.filesystems, fs_type):
        if not (fs.mkfs_options or fs.mount_options):
            continue
        mkfs += [o for o in _buildable(draft, fs, fs.mkfs_options) if o not in mkfs]
        taken = _still_taken(draft, fs_type, fs.mount_options, fs.source)
        mount += [o for o in _no_paths(draft, taken, fs.source) if o not in mount]
        lines.append(fs.source.number)
    return mkfs, mount, lines


_BTRFS_PROFILE_FLAGS = ("-d", "-m", "--data", "--metadata")
_ONE_DEVICE_PROFILES = ("single", "dup")
_PROFILES = ("raid0", "raid1", "raid1c3", "raid1c4", "raid10", "raid5", "raid6")


def _buildable(draft: Draft, fs: FilesystemFact, options: tuple[str, ...]) -> list[str]:
    """mkfs options one scratch device can take: a device path of the reporter's machine
    (an external log) is never written, nor a btrfs RAID profile that needs more devices."""
    source = fs.source
    kept = _no_paths(draft, options, source)
    if fs.type != "btrfs":
        return kept
    result: list[str] = []
    index = 0
    while index < len(kept):
        word = kept[index]
        following = kept[index + 1] if index + 1 < len(kept) else ""
        several = following in _PROFILES and draft.devices > 1
        profile = following and following not in _ONE_DEVICE_PROFILES
        if word in _BTRFS_PROFILE_FLAGS and profile and not several:
            draft.questions.append(
                QuestionFact(
                    "mkfs options",
                    f"the report's {word} {following} "
                    + ("is not a btrfs profile" if draft.devices > 1 else "needs several devices"),
                    "left out: btrfs's default profile",
                    source,
                )
            )
            index += 2
            continue
        result.append(word)
        index += 1
    return result


# mount options current kernels refuse (the filesystem dropped them): a report from an
# older kernel, or a /proc/mounts line of one, carries them
_REMOVED_MOUNT_OPTIONS = {
    "xfs": ("barrier", "nobarrier", "delaylog", "nodelaylog", "ihashsize", "osyncisdsync",
            "osyncisosync", "irixsgid"),
    "ext4": ("bh", "nobh"),
    "btrfs": ("alloc_start", "subvolrootid", "inode_cache", "noinode_cache"),
}  # fmt: skip


# a mount option current kernels refuse without another: (the other, why)
_OPTION_NEEDS = {
    ("ext4", "journal_async_commit"): (
        "data=writeback",
        "current kernels refuse journal_async_commit in data=ordered mode, ext4's default",
    ),
}


def _with_what_options_need(draft: Draft, configs: list[Config]) -> None:
    """An option that needs another gets it on every configuration of its filesystem, so
    the comparison stays about the report's option."""
    for (fs_type, option), (needed, why) in _OPTION_NEEDS.items():
        same = [c for c in configs if c.type == fs_type]
        if not any(option in c.mount_options for c in same):
            continue
        key = needed.partition("=")[0]
        if any(o.partition("=")[0] == key for c in same for o in c.mount_options):
            continue  # the report chose the data mode itself
        for config in same:
            config.mount_options.append(needed)
        draft.questions.append(
            QuestionFact(
                "mount options",
                f"{why}; the report's {option} does not mount as written",
                f"{needed} on every {fs_type} configuration, so they differ in {option} only",
            )
        )


def _still_taken(
    draft: Draft, fs_type: str, options: tuple[str, ...], source: Line
) -> tuple[str, ...]:
    """The mount options a current kernel still takes; the others are asked about."""
    removed = _REMOVED_MOUNT_OPTIONS.get(fs_type, ())
    kept = []
    for option in options:
        if option.partition("=")[0] in removed:
            draft.questions.append(
                QuestionFact(
                    "mount options",
                    f"the report's mount option {option}: {fs_type} no longer takes it "
                    "(removed from the kernel since the report)",
                    "left out: this kernel's default",
                    source,
                )
            )
            continue
        kept.append(option)
    return tuple(kept)


def _no_paths(draft: Draft, options: tuple[str, ...], source: Line) -> list[str]:
    """Options without a path of the reporter's machine: `-l logdev=/dev/nvme1n1` would
    make mkfs write to that device here."""
    kept: list[str] = []
    for index, word in enumerate(options):
        if "/dev/" in word or re.search(r"=\s*/", word):
            if kept and kept[-1].startswith("-") and "=" not in kept[-1] and index > 0:
                kept.pop()  # the flag that took this value ("-l")
            draft.questions.append(
                QuestionFact(
                    "mkfs or mount options",
                    f"the report's option {word} names a device or path of the reporter's machine",
                    "left out: fslab never writes to a device or path a report names",
                    source,
                )
            )
            continue
        kept.append(word)
    return kept


def _config(
    label: str, fs_type: str, description: str, mkfs: list[str], mount: list[str]
) -> Config:
    config = Config(label, fs_type, description, list(mkfs), list(mount))
    if fs_type == "ext4" and "-E" not in mkfs:
        config.mkfs_options = [*LAZY_INIT, *mkfs]
        config.comments.append(LAZY_INIT_WHY)
    return config


def config_table(config: Config) -> Table:
    table = tomlkit.table()
    for comment in config.comments:
        for line in wrap(comment):
            table.add(tomlkit.comment(line))
    table["label"] = config.label
    table["type"] = config.type
    table["description"] = config.description
    if config.mkfs_options:
        table["mkfs_options"] = config.mkfs_options
    if config.mount_options:
        table["mount_options"] = config.mount_options
    return table


def _user_mkfs(config: Config) -> list[str]:
    options = list(config.mkfs_options)
    if options[:2] == LAZY_INIT:
        options = options[2:]
    return options
