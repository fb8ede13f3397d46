"""The reporter's machine: kernel versions, CPU count, memory, the device and its limits.

Numbers in prose are only read with the words around them ("64 virtual CPUs",
"256 GiB of RAM", "16GiB volume", "max IOPS 64000K"); a bare "4.14" is a
kernel only next to "kernel", "Linux", a "v" or in a sentence about kernels.
"""

from __future__ import annotations

import re

from fslab.base.format import format_iops
from fslab.base.units import parse_size_bytes
from fslab.reproduce.facts import CpuFact, DeviceFact, KernelFact, MemoryFact, QuestionFact
from fslab.reproduce.text import NUMBER, ReportText, scaled_number, without_prompt

_VERSION = r"(\d\.\d{1,2}(?:\.\d{1,3})?(?:-rc\d+)?)"
_KERNEL_RES = (
    re.compile(
        r"(?:\bv|\blinux[- ]|\bkernel[- ]?(?:version\s*)?)" + _VERSION + r"(?![\d.]*\w)", re.I
    ),
    re.compile(_VERSION + r"\s+kernel", re.I),
    re.compile(r"(?<![\w.])(\d\.\d{1,2}\.\d{1,3})(?![\w%/]|\.\w|\s?(?:[kKMGT]i?B|s\b|ms\b))"),
)
_BARE_VERSION_RE = re.compile(
    r"(?<![\w.])(\d\.\d{1,2})(?![\w%/]|\.\d|\s?(?:[kKMGT]i?B|s\b|ms\b|x\b))"
)
# "btrfs-progs v5.18", "Debian 9.7", "qemu 7.2", "fio-3.35": another program's or a
# distribution's version, not the kernel's
_NOT_KERNEL_RE = re.compile(
    r"\b(?:\w*progs|fio|qemu|gcc|clang|python|debian|ubuntu|fedora|centos|rhel|sles|"
    r"opensuse|rocky|alma\w*|oracle|mint|arch|mysql|postgres\w*|virtme-ng)[\s-]*v?$"
    r"|\bbtrfs[\s-]*v$",  # "Btrfs v3.17": btrfs-progs, as `btrfs --version` prints it
    re.I,
)
# "files of the same names and sizes as the 2.6.20 tree": a kernel's sources as the
# workload's data, not a kernel that ran
_SOURCE_TREE_RE = re.compile(r"\s*(?:kernel\s+)?(?:source\s+)?(?:trees?|tarballs?|sources)\b", re.I)
_FILE_COMMAND_RE = re.compile(
    r"(?:^|[\s`'\"(;])(?:rm|tar|cd|cp|mv|ls|du|find|make|git|xz|unxz|bzip2|gzip)"
    r"(?:\s+-\S+)*\s+(?:\S*/)?$"
)
_KERNEL_WORDS_RE = re.compile(r"\b(kernels?|linux|regression|bisect\w*)\b", re.I)
_CPU_RE = re.compile(
    r"(?<![\w.])(\d{1,5})\s?(?:x\s?)?(?:-?\s?(?:virtual|logical|online|hardware)\s+)?"
    r"(v?cpus?|cores?|processors|xcpu|hw threads|threads)\b",
    re.I,
)
_CPU_SERIES_RE = re.compile(
    r"\b(?:Platinum|Gold|Silver|Bronze|Xeon(?:\(R\))?|EPYC|Ryzen|Threadripper|Core(?:\(TM\))?"
    r"|Opteron|Phi|Max|Ultra)\s+(?:\w+-)?$",
    re.I,
)
"""The series word a CPU model number follows (the number is the model, not a count)."""
# (?<!\d): a size starts at a number's first digit (trying every digit of a long run of
# digits was quadratic); a device word is at most 200 characters before its size.
_SIZE = r"(?<!\d)(\d+(?:\.\d+)?)\s?([KMGTP](?:i?B)?|[kmgtp]b?)\b"
_MEMORY_RES = (
    re.compile(_SIZE + r"\s+(?:of\s+)?(?:RAM|memory|mem)\b", re.I),
    re.compile(r"\b(?:RAM|memory|mem)(?:\s+size)?(?:\s+of|:)?\s+" + _SIZE, re.I),
)
_DEVICE_WORDS = r"(?:volume|disk|partition|device|drive|ssd|nvme|lun|filesystem|file system)"
_DEVICE_SIZE_RES = (
    # not "4k filesystem block size", nor "nr_threads: 64t" above a "disk:" parameter
    re.compile(_SIZE + r"\s+(?:\w+\s+)?" + _DEVICE_WORDS + r"\b(?!:|\s+block\s+size)", re.I),
    re.compile(
        r"\b" + _DEVICE_WORDS + r"\b[^.]{0,200}?\b(?:are|is|of)\s+" + _SIZE + r"(?!/)", re.I
    ),
    re.compile(r"\bpartition:\s*" + _SIZE, re.I),
)
# "max IOPS 64000K", "provisioned IOPS of 3000", "a 3000 IOPS limit", "3000 provisioned
# IOPS". A multiplier is a letter on its own: "max IOPS 500 mounted" is 500, not 500 million.
_IOPS_LIMIT_RES = (
    re.compile(
        r"\b(?:max(?:imum)?|provisioned|limit(?:ed)?(?: to)?)\s+(?:of\s+)?IOPS\s+(?:of\s+)?"
        + NUMBER
        + r"(?![A-Za-z])",
        re.I,
    ),
    re.compile(
        r"(?<![\w.])" + NUMBER + r"\s+(?:provisioned\s+IOPS|IOPS\s+(?:limit|provisioned|max))",
        re.I,
    ),
    # "one NVME device ... with IOPS 64000", "provisioned at 64000 IOPS", "10000 IOPS
    # 1000GiB NVME volume": a cloud volume's rating
    re.compile(r"\b(?:device|disk|volume|drive)\b[^.;]{0,40}?\bwith\s+IOPS\s+" + NUMBER, re.I),
    re.compile(r"\bprovisioned\s+(?:at|with|for)\s+" + NUMBER + r"\s+IOPS\b", re.I),
    re.compile(
        r"(?<![\w.])" + NUMBER + r"\s+IOPS\s+\d+(?:\.\d+)?\s*[GT]i?B\s+(?:\w+\s+)?volume\b", re.I
    ),
)
SMALLEST_DEVICE_BYTES = 64 * 1024**2
"""The smallest target a spec takes: a smaller size beside a device word is something else
("System: RAID1C4 8.00MiB" over "SSD detected: no" in mkfs.btrfs's output)."""
_DISK_PARAMETER_RE = re.compile(r"^\s*disk:\s*(\S+)\s*$")
# A limit above this whose digits alone are already thousands has a slipped multiplier
# ("64000K"): cloud volumes are provisioned with a few hundred thousand IOPS at most.
# "1.5M" stays 1.5 million.
MAX_PROVISIONED_IOPS = 1_000_000


def find_kernels(report: ReportText) -> list[KernelFact]:
    """Kernel versions in order of first mention, each once."""
    seen: dict[str, KernelFact] = {}
    for number, line in report.numbered():
        if _looks_like_code_or_output(line):
            continue
        matches = [m for regex in _KERNEL_RES for m in regex.finditer(line)]
        if _KERNEL_WORDS_RE.search(line):
            matches += list(_BARE_VERSION_RE.finditer(line))
        found = [
            m.group(1)
            for m in matches
            if not _NOT_KERNEL_RE.search(line[: m.start(1)])
            and not _SOURCE_TREE_RE.match(line[m.end(1) :])
            and not _source_tree_operand(line, m)
        ]
        for version in sorted(set(found), key=line.find):
            if _plausible_kernel(version):
                seen.setdefault(version, KernelFact(version, report.line(number)))
    return list(seen.values())


def _source_tree_operand(line: str, match: re.Match[str]) -> bool:
    """`rm -rf linux-5.10`, `tar xf linux-6.1.tar`: a source tree or tarball that a
    command works on (the workload's data), not a kernel that ran."""
    before = line[: match.start(1)]
    if not before.lower().endswith("linux-"):
        return False
    return line[match.end(1) :].startswith((".tar", "/")) or bool(
        _FILE_COMMAND_RE.search(before[: -len("linux-")])
    )


def _plausible_kernel(version: str) -> bool:
    major = int(version.split(".")[0])
    return 2 <= major <= 9


def _looks_like_code_or_output(line: str) -> bool:
    """perf, diff and fio output lines carry dotted numbers that are not kernels."""
    stripped = line.strip()
    return stripped.startswith(("|", "--", "+", "@@", "diff ", "index ")) or "%" in stripped[:12]


def find_cpus(report: ReportText) -> list[CpuFact]:
    facts: list[CpuFact] = []
    for number, line in report.numbered():
        for match in _CPU_RE.finditer(line):
            word = match.group(2).lower()
            if word.endswith("threads") and not re.search(
                r"socket|cpu|xeon|epyc|machine", line, re.I
            ):
                continue
            if _in_fio_option(line, match.start()) or line[match.end() :].lstrip().startswith("@"):
                continue  # fio's own jobs, or a CPU model number ("Gold 6346 CPU @ 3.10GHz")
            if _CPU_SERIES_RE.search(line[: match.start()]):
                continue  # a model number without the clock: "Xeon(R) Platinum 9242 CPU,"
            facts.append(CpuFact(int(match.group(1)), match.group(0), report.line(number)))
    return facts


def _in_fio_option(line: str, at: int) -> bool:
    """'--numjobs=2048 threads' is fio's, not the machine's."""
    before = line[:at].rstrip()
    return before.endswith(("=", "fio")) or bool(re.search(r"\bfio\s+\w+\s*$", before))


def find_memory(report: ReportText) -> list[MemoryFact]:
    facts: list[MemoryFact] = []
    for number, line, own in report.wrapped():
        for regex in _MEMORY_RES:
            for match in regex.finditer(line):
                size = _size(match.group(1), match.group(2))
                if size and match.start() < own:
                    text = f"{match.group(1)}{match.group(2)}"
                    facts.append(MemoryFact(size, text, report.line(number)))
    return _first_per_line(facts)


def find_devices(report: ReportText) -> tuple[list[DeviceFact], list[QuestionFact]]:
    facts: list[DeviceFact] = []
    questions: list[QuestionFact] = []
    for number, text, own in report.wrapped():
        line = report.lines[number - 1]
        if _looks_like_code_or_output(line):
            continue
        for regex in _DEVICE_SIZE_RES:
            match = regex.search(text)
            if not match or match.start() >= own:
                continue
            if re.search(r"\b(RAM|memory|mem)\b", text[: match.end()][-40:], re.I):
                continue  # "Mem: 2GB SSD ..." is the memory, not the SSD
            size = _size(match.group(1), match.group(2))
            if size and size >= SMALLEST_DEVICE_BYTES:
                said = f"{match.group(1)}{match.group(2)}"
                facts.append(DeviceFact(said, report.line(number), size_bytes=size))
                break
        limit = next((m for regex in _IOPS_LIMIT_RES if (m := regex.search(line))), None)
        if limit:
            digits, multiplier = limit.group(1), limit.group(2)
            value, bare = scaled_number(digits, multiplier), scaled_number(digits, None)
            if multiplier and value > MAX_PROVISIONED_IOPS and bare >= 1000:
                questions.append(
                    QuestionFact(
                        item="device IOPS limit",
                        question=f"'{limit.group(0).strip()}' reads as {format_iops(value)}, more "
                        f"than any volume is provisioned with",
                        assumed=f"{format_iops(bare)} (the '{multiplier}' taken for a slip)",
                        source=report.line(number),
                    )
                )
                value = bare
            facts.append(DeviceFact(limit.group(0).strip(), report.line(number), iops_limit=value))
        disk = _DISK_PARAMETER_RE.match(line)
        if disk:
            facts.append(DeviceFact(f"disk: {disk.group(1)}", report.line(number)))
    return facts, questions


_IMAGE_MADE_RE = re.compile(
    r"^(?:sudo\s+)?(?:truncate\s+-s\s*|fallocate\s+-l\s*)(\d+(?:\.\d+)?)([KMGTP]i?B?)\s+(\S+)$",
    re.I,
)


def image_devices(report: ReportText, images: set[str]) -> list[DeviceFact]:
    """The size of an image file the report makes and then makes its filesystem on
    (`truncate -s 20T sparse1.img`, then `mkfs.ext4 sparse1.img`): the reporter's device."""
    facts: list[DeviceFact] = []
    for number, line in report.numbered():
        made = _IMAGE_MADE_RE.match(without_prompt(line))
        if made and made.group(3) in images and (size := _size(made.group(1), made.group(2))):
            facts.append(DeviceFact(without_prompt(line), report.line(number), size_bytes=size))
    return facts


def gives_device_limit(line: str) -> bool:
    """Whether the line gives a device's IOPS limit: its number is the limit, not a
    measured figure (figures.py leaves such lines alone)."""
    return any(regex.search(line) for regex in _IOPS_LIMIT_RES)


def _size(digits: str, unit: str) -> int | None:
    text = unit if unit[-1:].lower() == "b" or unit[-2:].lower() == "ib" else unit + "iB"
    try:
        return parse_size_bytes(f"{digits}{text}")
    except ValueError:
        return None


def _first_per_line(facts: list[MemoryFact]) -> list[MemoryFact]:
    kept: dict[int, MemoryFact] = {}
    for fact in facts:
        kept.setdefault(fact.source.number, fact)
    return list(kept.values())
