#!/usr/bin/env python3
"""Every input surface a stranger can reach, fuzzed: refusals, tracebacks, writes outside.

Surfaces (seeded mutators; each input goes through fslab in this process, the
CLI's own commands through its typer app, or the library function a command
calls with the CLI's error guard around it):

- report: `fslab reproduce` on the reports of tests/data/reports cut, with
  lines shuffled, duplicated and dropped, bytes and hostile lines inserted
  (fio options that run commands at canary paths, `$(...)`, backticks, loops,
  absurd numbers), not UTF-8, and now and then 100 MB, a line of 10^6
  options, a job file of thousands of sections. A spec it writes must load
  and carry no option that needs the opt-in.
- spec: the presets and test specs with values replaced by absurd or
  wrong-typed ones, keys added and removed, the TOML cut, `--set` overrides
  of random keys and values, fio options that run canary commands, sweeps of
  10^6 values: load_spec, plan.check_workload, expand_points (nothing runs).
- import: a real export (tests/data/campaign_fsync_nocollect.json, and its
  re-export by this fslab) malformed, cut, nested, huge, with names, labels,
  metric and artifact names holding `/`, `..`, NUL, markup and shell text:
  `fslab import` into a SQLite file, then `show`, `report` (text, json,
  html, reply), `list`, `scale`, `diagnose`, `compare`, `export` and a
  re-import of what was accepted; one in ten through the fleet's import of
  fetched exports.
- inventory: fleet inventories (INI and YAML) with host names and variables
  holding shell metacharacters, templates, wrong types: read_inventory, and
  for an accepted one the playbook's shell tasks and fetch paths rendered
  with its values, which must not change the shell's structure nor leave the
  fetch directory (ansible-playbook is never started).
- dburl: `--db` and $FSLAB_DB values: SQLite paths with odd characters,
  malformed postgresql:// URLs (only 127.0.0.1 / localhost, where no port
  listens), other schemes; through list, show, export and store migrate.

Each surface runs in a child process. As root, the child has a private mount
and network namespace: /tmp, /var/tmp, /root, /home, /etc, /run, /var/lib,
/srv, /opt and this repository are overlaid, so whatever the surface creates,
changes or removes there lands in the overlay and is counted (nothing else on
the machine sees it, and others' writes are not counted); the network is a
loopback where nothing listens. cwd, HOME, XDG_*_HOME and TMPDIR point into
one temporary directory under /dev/shm, the only place writes are allowed.
A Python audit hook records files opened for writing outside it and every
process started (none should be). Canary files that hostile inputs name are
looked for afterwards in the sandbox, the overlays and where they were named.
Without root the watched roots are compared by snapshot instead.

Prints per surface: inputs, accepted (exit 0), refused (exit 2 with a
message), failed (another exit with an fslab: message, no traceback),
tracebacks (an exception past fslab's error guard, or an input over the time
budget), violations (a property broken: a spec reproduce wrote that does not
load or opts in to commands, a name's markup unescaped in the HTML report or
a terminal escape printed, an accepted import that does not import again
once exported, an inventory value that changes a playbook shell script or
sends an export outside the fetch directory), writes outside, canaries,
processes started, peak RSS, the slowest input and how many took over 5 s;
then the first distinct tracebacks, violations and slow inputs, which are
kept under --keep. Exit status 1 if any traceback, violation, write outside,
canary or process was found.

Run: nice -n 19 .venv/bin/python bench/fuzz_inputs.py [--seed 1] [--inputs 10000]
     [--surface report ...] [--budget 30]
"""

from __future__ import annotations

import argparse
import ctypes
import faulthandler
import json
import os
import random
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
SURFACES = ("report", "spec", "import", "inventory", "dburl")
WATCHED = ("/tmp", "/var/tmp", "/root", "/home", "/etc", "/run", "/var/lib", "/srv", "/opt")
CANARY = "FSLAB-FUZZ-CANARY"
MARKUP = "fslabfuzzmarkup"  # inside <script>, [bold] and {{ }} in hostile names
SLOW_S = 5.0  # an input slower than this is kept (not counted against the surface)
MEMORY_LIMIT = 6 * 1024**3  # address space of a surface's child: a blow-up is a MemoryError
CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
PROCESS_EVENTS = (
    "subprocess.Popen",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "os.forkpty",
    "pty.spawn",
)
PATH_EVENTS = {
    "os.mkdir": (0,),
    "os.rename": (0, 1),
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.symlink": (1,),
    "os.link": (1,),
    "os.truncate": (0,),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.utime": (0,),
    "shutil.copyfile": (1,),
    "shutil.copytree": (1,),
    "shutil.rmtree": (0,),
    "shutil.move": (0, 1),
    "sqlite3.connect": (0,),
}


class InputTimeout(BaseException):
    """An input ran past its time budget (a BaseException: no `except Exception` eats it)."""


# --------------------------------------------------------------------------- results


@dataclass
class Outcome:
    code: int
    message: str = ""
    trace: str | None = None
    stdout: str = ""


@dataclass
class Finding:
    kind: str  # "traceback" | "violation"
    signature: str
    label: str
    detail: str
    saved: str = ""


@dataclass
class SurfaceResult:
    surface: str
    inputs: int = 0
    accepted: int = 0
    refused: int = 0
    failed: int = 0
    tracebacks: int = 0
    violations: int = 0
    writes: list[str] = field(default_factory=list)
    canaries: list[str] = field(default_factory=list)
    processes: list[str] = field(default_factory=list)
    peak_rss_mib: float = 0.0
    peak_label: str = ""
    slowest_s: float = 0.0
    slowest_label: str = ""
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)
    distinct: dict[str, int] = field(default_factory=dict)
    isolation: str = ""
    error: str = ""
    harness_errors: list[str] = field(default_factory=list)
    slow: int = 0


# --------------------------------------------------------------------------- the sandbox


@dataclass
class Sandbox:
    """The one place writes are allowed, and where the surface's inputs are written."""

    root: Path  # allowed: cwd, HOME, XDG_*, TMPDIR live here
    overlay: Path  # the overlays' upper and work directories (outside every watched root)
    token: str

    @property
    def inputs(self) -> Path:
        return self.root / "inputs"

    @property
    def cwd(self) -> Path:
        return self.root / "cwd" / "a" / "b"

    def canary_paths(self) -> list[str]:
        """Where hostile inputs ask for a canary: here, the watched roots, relative."""
        name = f"{CANARY}-{self.token}"
        return [
            str(self.root / "canary" / name),
            f"/tmp/{name}",
            f"/var/tmp/{name}",
            f"/root/{name}",
            f"/etc/{name}",
            f"/dev/shm/{name}",
            name,
            f"../{name}",
        ]

    def enter(self) -> None:
        """Point this process (and all it starts) into the sandbox."""
        for sub in ("home", "data", "cache", "config", "state", "tmp", "inputs", "canary"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self.cwd.mkdir(parents=True, exist_ok=True)
        for name in list(os.environ):
            if name.startswith(("PG", "FSLAB_", "ANSIBLE_")):
                del os.environ[name]
        os.environ.update(
            HOME=str(self.root / "home"),
            XDG_DATA_HOME=str(self.root / "data"),
            XDG_CACHE_HOME=str(self.root / "cache"),
            XDG_CONFIG_HOME=str(self.root / "config"),
            XDG_STATE_HOME=str(self.root / "state"),
            TMPDIR=str(self.root / "tmp"),
            PYTHONDONTWRITEBYTECODE="1",
            MPLBACKEND="Agg",
        )
        tempfile.tempdir = None
        sys.dont_write_bytecode = True
        os.chdir(self.cwd)

    def allowed(self, path: str) -> bool:
        root = str(self.root)
        return path == root or path.startswith(root + "/") or path == "/dev/null"


def _watched_roots() -> list[str]:
    roots = [r for r in WATCHED if os.path.isdir(r) and not os.path.islink(r)]
    return [*roots, str(ROOT)]


def isolate(sandbox: Sandbox) -> list[tuple[str, Path]]:
    """A private mount and network namespace with an overlay on every watched root."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS | CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "unshare")
    subprocess.run(["mount", "--make-rprivate", "/"], check=True)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    uppers = []
    for i, root in enumerate(_watched_roots()):
        upper, work = sandbox.overlay / f"upper{i}", sandbox.overlay / f"work{i}"
        upper.mkdir(parents=True)
        work.mkdir(parents=True)
        options = f"lowerdir={root},upperdir={upper},workdir={work}"
        subprocess.run(
            ["mount", "-t", "overlay", "overlay", "-o", options, root],
            check=True,
            capture_output=True,
        )
        uppers.append((root, upper))
    return uppers


def overlay_writes(uppers: list[tuple[str, Path]]) -> list[str]:
    """What landed in the overlays: files, removals (whiteouts) and new empty directories."""
    found = []
    for root, upper in uppers:
        for dirpath, dirnames, filenames in os.walk(upper):
            rel = os.path.relpath(dirpath, upper)
            for name in filenames:
                found.append(os.path.normpath(os.path.join(root, rel, name)))
            if not dirnames and not filenames and dirpath != str(upper):
                found.append(os.path.normpath(os.path.join(root, rel)) + "/")
    return found


def snapshot(exclude: list[str]) -> dict[str, tuple[int, int]]:
    """Without root: every file under the watched roots, its mtime and size."""
    seen: dict[str, tuple[int, int]] = {}
    skip = (*exclude, str(ROOT / ".venv"), str(ROOT / ".git"), "/root/.cache")
    for root in _watched_roots():
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not os.path.join(dirpath, d).startswith(skip)]
            for name in filenames:
                path = os.path.join(dirpath, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                seen[path] = (st.st_mtime_ns, st.st_size)
    return seen


class Audit:
    """Files opened for writing outside the sandbox, and processes started."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.writes: list[str] = []
        self.processes: list[str] = []
        self.active = False

    def install(self) -> None:
        sys.addaudithook(self._hook)
        self.active = True

    def _outside(self, path: Any) -> None:
        if isinstance(path, int) or path is None:
            return
        text = os.fsdecode(path) if isinstance(path, bytes) else str(path)
        if text in (":memory:", "") or text.startswith("file:"):
            return
        full = os.path.normpath(os.path.join(os.getcwd(), text))
        if not self.sandbox.allowed(full):
            self.writes.append(full)

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active:
            return
        try:
            if event == "open":
                path, mode, flags = args
                if (isinstance(flags, int) and flags & WRITE_FLAGS) or (
                    isinstance(mode, str) and any(c in mode for c in "wax+")
                ):
                    self._outside(path)
            elif event in PATH_EVENTS:
                for index in PATH_EVENTS[event]:
                    if index < len(args):
                        self._outside(args[index])
            elif event in PROCESS_EVENTS:
                shown = args[0] if args else ""
                if event == "subprocess.Popen" and len(args) > 1:
                    shown = args[1]
                self.processes.append(f"{event} {str(shown)[:200]}")
        except Exception:  # the hook must never break the code it watches
            pass


# --------------------------------------------------------------------------- driving fslab


class Cli:
    """fslab's typer app, invoked in this process as the command line would."""

    def __init__(self) -> None:
        import typer.main
        from typer.testing import CliRunner

        from fslab.cli import app

        self.command = typer.main.get_command(app)
        self.runner = CliRunner()

    def __call__(
        self, argv: list[str], stdin: bytes | None = None, env: dict[str, str] | None = None
    ) -> Outcome:
        with self.runner.isolation(input=stdin, env=env) as streams:
            code, trace = 0, None
            try:
                self.command.main(args=argv, prog_name="fslab")
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except Exception:
                code, trace = 1, traceback.format_exc()
            sys.stdout.flush()
            sys.stderr.flush()
            stdout = streams[0].getvalue().decode("utf-8", "replace")
            stderr = streams[1].getvalue().decode("utf-8", "replace")
        return Outcome(code, _message(stderr), trace, stdout)


def _message(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    starts = [i for i, line in enumerate(lines) if line.startswith(("fslab:", "Usage:", "Error"))]
    if starts:
        return " ".join(lines[starts[-1] :])[:600]
    return lines[-1][:600] if lines else ""


def guarded(func: Callable[[], object]) -> Outcome:
    """A library call as the CLI's guard would end it: FslabError -> its exit code."""
    from fslab.base.errors import FslabError

    try:
        func()
    except FslabError as exc:
        return Outcome(exc.exit_code, f"fslab: {exc}")
    except Exception:
        return Outcome(1, "", traceback.format_exc())
    return Outcome(0)


@dataclass
class Case:
    label: str
    run: Callable[[], Outcome]
    saved: dict[str, bytes] = field(default_factory=dict)  # the input, to keep if it fails
    violations: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- mutation


def hostile_words(sandbox: Sandbox) -> list[str]:
    canaries = sandbox.canary_paths()
    words = [
        "$(touch {c})",
        "`touch {c}`",
        "; touch {c};",
        "| tee {c}",
        "> {c}",
        "&& touch {c} &&",
        "$(touch {c} >&2)",
        "${{IFS}}touch${{IFS}}{c}",
        "'; touch {c}; '",
        '"; touch {c}; "',
        "\n touch {c}\n",
        "{{{{ lookup('pipe', 'touch {c}') }}}}",
        "{c}",
    ]
    out = [w.format(c=c) for w in words for c in canaries[:1]]
    out += [random.choice(words).format(c=c) for c in canaries]
    out += [
        "../../../../etc/passwd",
        "../" * 30 + "tmp",
        "/dev/sda",
        "/dev/nvme0n1",
        "/etc/shadow",
        "/proc/self/mem",
        "~root/.ssh/id_rsa",
        "$HOME",
        "$((1<<62))",
        "a/b",
        "..",
        ".",
        "/",
        "\x00",
        "a\x00b",
        "\x1b[31mred\x1b[0m",
        "\x1b]0;title\x07",
        "\r",
        "\t",
        f"[bold red]{MARKUP}[/]",
        "[/]",
        "[link=file:///etc/passwd]x[/link]",
        f"<script>{MARKUP}</script>",
        f"\"><img src=x onerror=alert('{MARKUP}')>",
        "{% for x in range(999999999) %}x{% endfor %}",
        "%s%n%x%p",
        "'",
        '"',
        "\\",
        "A" * 70000,
        *(
            run * (60000 // len(run))
            for run in ("-", "1", "a-", "_", " ", "=", "/", ".", "a_", "9.")
        ),
        "é" * 300,
        "\u202e\u200b\ufeff",
        "\udcff\udc80",
        "9" * 400,
        "-1",
        "0",
        "1e999",
        "-1e999",
        "nan",
        "inf",
        "0x7fffffffffffffff",
        "18446744073709551616",
        "1" + "0" * 30,
        "1e-400",
        "true",
        "[]",
        "{}",
        "",
        " ",
        "null",
    ]
    return out


ABSURD_NUMBERS = [
    "0",
    "-1",
    "-999999999",
    "1000000000",
    "4294967296",
    "18446744073709551616",
    "9" * 60,
    "9" * 400,  # past a float's range
    "9" * 5000,  # past int()'s 4,300 digits
    "1e308",
    "1e999",
    "nan",
    "inf",
    "0.0000001",
    "1.5",
    "0x10",
    "1_000",
    "999999T",
    "1E",
    "-5g",
]


class Mutator:
    """Text mutations: cut, lines shuffled, duplicated and dropped, hostile bytes inserted."""

    def __init__(self, rng: random.Random, sandbox: Sandbox) -> None:
        self.rng = rng
        self.hostile = hostile_words(sandbox)

    def text(self, text: str, others: list[str], lines_pool: list[str]) -> tuple[str, list[str]]:
        labels = []
        for _ in range(self.rng.choice((1, 1, 2, 2, 3, 4))):
            op = self.rng.choice(
                (
                    "cut",
                    "shuffle",
                    "duplicate",
                    "drop",
                    "bytes",
                    "line",
                    "line",
                    "word",
                    "number",
                    "splice",
                    "crlf",
                )
            )
            text = getattr(self, "_" + op)(text, others, lines_pool)
            labels.append(op)
        return text, labels

    def _cut(self, text: str, *_: Any) -> str:
        if not text:
            return text
        a, b = sorted(self.rng.randrange(len(text) + 1) for _ in range(2))
        return self.rng.choice((text[:a], text[a:], text[:a] + text[b:]))

    def _lines(self, text: str) -> list[str]:
        return text.split("\n")

    def _shuffle(self, text: str, *_: Any) -> str:
        lines = self._lines(text)
        if self.rng.random() < 0.5:
            self.rng.shuffle(lines)
        elif len(lines) > 2:
            i = self.rng.randrange(len(lines) - 1)
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
        return "\n".join(lines)

    def _duplicate(self, text: str, *_: Any) -> str:
        lines = self._lines(text)
        i = self.rng.randrange(len(lines))
        times = self.rng.choice((2, 3, 10, 100, 2000))
        return "\n".join(lines[:i] + [lines[i]] * times + lines[i:])

    def _drop(self, text: str, *_: Any) -> str:
        lines = self._lines(text)
        keep = [line for line in lines if self.rng.random() > 0.2]
        return "\n".join(keep)

    def _bytes(self, text: str, *_: Any) -> str:
        pool = (
            "\x00\x01\x1b\x7f\r\t\n'\"`$(){}[]<>;|&\\#%~*?!=:,.-_/"
            "\u00e9\u202e\u200b\ufeff\U0001f600"
        )
        for _ in range(self.rng.randint(1, 20)):
            i = self.rng.randrange(len(text) + 1)
            text = text[:i] + self.rng.choice(pool) * self.rng.choice((1, 1, 3, 50)) + text[i:]
        return text

    def _line(self, text: str, _others: list[str], lines_pool: list[str]) -> str:
        lines = self._lines(text)
        i = self.rng.randrange(len(lines) + 1)
        new = (
            self.rng.choice(lines_pool)
            if self.rng.random() < 0.8
            else self.rng.choice(self.hostile)
        )
        return "\n".join([*lines[:i], new, *lines[i:]])

    def _word(self, text: str, *_: Any) -> str:
        words = list(re.finditer(r"[^\s=]+", text))
        if not words:
            return text
        m = self.rng.choice(words)
        return text[: m.start()] + self.rng.choice(self.hostile) + text[m.end() :]

    def _number(self, text: str, *_: Any) -> str:
        numbers = list(re.finditer(r"\d+", text))
        for m in self.rng.sample(numbers, min(len(numbers), self.rng.randint(1, 4))):
            text = text[: m.start()] + self.rng.choice(ABSURD_NUMBERS) + text[m.end() :]
            break  # positions shift: one a pass
        return text

    def _splice(self, text: str, others: list[str], _lines_pool: list[str]) -> str:
        other = self.rng.choice(others)
        a, b = self.rng.randrange(len(text) + 1), self.rng.randrange(len(other) + 1)
        return text[:a] + other[b:]

    def _crlf(self, text: str, *_: Any) -> str:
        return self.rng.choice(
            (text.replace("\n", "\r\n"), text.replace("\n", "\r"), text + "\n" * 5000)
        )


def encode(text: str, rng: random.Random) -> bytes:
    """Text as bytes; lone surrogates become invalid UTF-8, now and then on purpose."""
    data = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.02:
        i = rng.randrange(len(data) + 1)
        data = data[:i] + rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xfe\xfe")) + data[i:]
    return data


# --------------------------------------------------------------------------- surfaces


class Surface:
    name = ""

    def __init__(self, rng: random.Random, sandbox: Sandbox, cli: Cli) -> None:
        self.rng = rng
        self.sandbox = sandbox
        self.cli = cli
        self.mutator = Mutator(rng, sandbox)
        self.canaries = sandbox.canary_paths()

    def case(self, index: int) -> Case:
        raise NotImplementedError

    def canary(self) -> str:
        return self.rng.choice(self.canaries)


def fio_lines(canary: str) -> list[str]:
    c = canary
    return [
        f"fio --name=x --rw=write --bs=4k --size=16m --exec_prerun='touch {c}' --numjobs=4",
        f"fio --name=x --ioengine=exec --program=/usr/bin/touch --arguments={c}",
        f"fio --name=x --rw=randwrite --write_iolog={c} --write_bw_log={c}",
        f"fio --name=x --rw=write --filename={c} --size=1g",
        "fio --name=x --rw=write --filename=/dev/sda --direct=1",
        "fio --name=x --directory=/ --rw=write --size=1g",
        f"fio --name=x --trigger='touch {c}' --trigger-file={c}",
        f"fio --name=x --rw=write --numjobs=$(touch {c}) --bs=`touch {c}`",
        f"fio --name=x --rw=write --size=$(nproc)g --numjobs=$(touch {c}; nproc)",
        "fio --name=x --rw=randwrite --numjobs=1000000000 --size=999999T --bs=0 "
        "--runtime=99999999999",
        "fio --name=x --rw=write --numjobs=-1 --iodepth=0 --bs=1E --runtime=-5",
        "fio --name=x --rw=write --numjobs=4096 --nrfiles=1000000000 --filesize=1k",
        f"fio --name=x --mem=mmaphuge:{c} --cgroup=fuzz --opendir=/etc --read_iolog={c}",
        f"fio --name=x --include {c} --profile=act --cpus_allowed=0-100000",
        "fio " + " ".join(f"--o{i}={i}" for i in range(600)),
        "fio --name=x " + "--rw=write " * 1000,
        f"fio --client={c} --server --daemonize={c} --remote-config={c}",
        f"fio {c}.fio",
        "fio job.fio --output=/etc/passwd --output-format=normal",
        "for j in $(seq 1 1000000); do fio --name=x --numjobs=$j --rw=write; done",
        "for j in {1..100000000}; do",
        "for ((i=1; i<=1000000000; i*=1)); do fio --name=x --numjobs=$i; done",
        "for ((i=1; i<=10; i+=0)); do fio --name=x --numjobs=$i; done",
        "for i in 1 2 4 8; do for j in 1 2; do fio --name=x --numjobs=$i --iodepth=$j; done; done",
        f"NJ=$(touch {c}); fio --name=x --numjobs=$NJ",
        "JOBS=16",
        "fio --name=x --numjobs=$JOBS --bs=${BS:-4k} --size=${SIZE}",
        f"cat <<EOF > {c}\n[global]\nexec_prerun=touch {c}\nEOF",
        f"[global]\nexec_prerun=touch {c}\nexec_postrun=touch {c}\n[job]\nrw=write\nsize=1m",
        f"[job1]\nioengine=exec\nprogram=/usr/bin/touch\narguments={c}\n",
        "[j]\nrw=randwrite\nnumjobs=1000000000\nsize=99999999T\n",
        f"[j]\ninclude {c}\n$include /etc/passwd\n",
        "[ global ]\n[]\n[[x]]\n=\n==\nrw\n",
        f"mkfs.ext4 -F -O ^has_journal -J device={c} /dev/sda",
        "mkfs.xfs -f -d agcount=1000000000 -l size=999999T /dev/nvme0n1",
        "mkfs.ext4 " + "-E x " * 3000 + "/dev/sdb",
        "mount -o remount,rw /",
        "mount -t ext4 -o " + "x," * 5000 + "noatime /dev/loop0 /mnt",
        f"mount -o dioread_nolock,$(touch {c}) /dev/sdb /mnt",
        f"dd if=/dev/zero of={c} bs=1M count=100000000000",
        "dd if=/dev/zero of=/dev/sda bs=1E count=1 conv=fsync",
        "dd if=/dev/zero of=/mnt/x bs=0 count=-1 oflag=direct",
        "1000000 bytes (1.0 MB, 1 MiB) copied, 0 s, inf MB/s",
        "CPU: 1000000000 cores, nr_cpu_ids=4294967296",
        "Memory: 99999999999999T",
        "Linux version 99999999.999999.9999-rc99999 (gcc)",
        f"Linux 6.1.0-$(touch {c})",
        "kernel: 6.1.0-rc1+ #1 SMP PREEMPT_DYNAMIC",
        "write: IOPS=99999999999999999999999, BW=1e308MiB/s",
        "write: IOPS=nan, BW=-5MiB/s (-5MB/s)",
        "IOPS: " + "1 " * 10000,
        "nr_task: 1000000000",
        "test_size: 999999999T",
        f"fs: $(touch {c})",
        "disk: 1000000HDD",
        "runtime: -1",
        "bs: 0",
        "lat (usec): min=-1, max=1e999, avg=nan, stdev=inf",
        "Tested-by: " + "x" * 5000,
    ]


class ReportSurface(Surface):
    name = "report"

    def __init__(self, rng: random.Random, sandbox: Sandbox, cli: Cli) -> None:
        super().__init__(rng, sandbox, cli)
        self.seeds = {p.name: p.read_text() for p in sorted((DATA / "reports").glob("*.txt"))}
        self.names = sorted(self.seeds)
        self.pool = [line for c in self.canaries for line in fio_lines(c)]
        self.pool += [line for text in self.seeds.values() for line in text.split("\n") if line]

    def _huge(self) -> tuple[str, bytes]:
        kind = self.rng.choice(("100MB", "1e6 options", "under the limit"))
        if kind == "100MB":
            line = self.rng.choice(self.pool).encode("utf-8", "surrogatepass") + b"\n"
            return kind, line * (100 * 1024**2 // len(line) + 1)
        if kind == "1e6 options":
            return kind, ("fio --name=x " + "--bs=4k " * 10**6 + "\n").encode()
        pick = self.rng.choice(("options", "sections", "commands", "figures", "blank", "long"))
        if pick == "options":
            text = "fio --name=x " + " ".join(f"--a{i}={i}" for i in range(90000))
        elif pick == "sections":
            text = "```\n" + "".join(f"[job{i}]\nrw=write\nbs=4k\n" for i in range(5000)) + "```"
        elif pick == "commands":
            text = "\n".join(f"fio --name=j{i} --rw=write --numjobs={i}" for i in range(8000))
        elif pick == "figures":
            text = "\n".join(f"numjobs={i}: write: IOPS={i}k, BW={i}MiB/s" for i in range(20000))
        elif pick == "blank":
            text = "\n" * 900000 + "fio --name=x --rw=write"
        else:
            text = "fio --name=x --rw=write " + "x" * 1000000
        return f"under the limit: {pick}", text.encode()

    def case(self, index: int) -> Case:
        name = self.rng.choice(self.names)
        labels = [name]
        if self.rng.random() < 1 / 1500:
            kind, data = self._huge()
            labels = [f"huge: {kind}"]
        else:
            text, ops = self.mutator.text(self.seeds[name], list(self.seeds.values()), self.pool)
            labels += ops
            data = encode(text, self.rng)
        path = self.sandbox.inputs / "report.txt"
        out = self.sandbox.root / "out" / "spec.toml"
        mode = self.rng.choices(("file", "stdin", "output", "json"), (4, 2, 3, 1))[0]
        labels.append(mode)
        argv = ["reproduce", "-" if mode == "stdin" else str(path)]
        if mode == "output":
            argv += ["-o", str(out), "--force"]
        if mode == "json":
            argv.append("--json")
        if self.rng.random() < 0.3:
            argv.append("--host")
        case = Case(" ".join(labels), lambda: Outcome(0), saved={"report.txt": data})

        def run() -> Outcome:
            if mode != "stdin":
                path.write_bytes(data)
            out.parent.mkdir(exist_ok=True)
            outcome = self.cli(argv, stdin=data if mode == "stdin" else None)
            if outcome.code == 0 and outcome.trace is None:
                self._check_written(outcome, mode, out, case)
            return outcome

        case.run = run
        return case

    def _check_written(self, outcome: Outcome, mode: str, out: Path, case: Case) -> None:
        """A spec reproduce wrote must load and must not carry an option needing the opt-in."""
        if mode == "output":
            text = out.read_text()
        elif mode == "json":
            text = json.loads(outcome.stdout)["toml"]
        else:
            text = outcome.stdout
        written = self.sandbox.root / "out" / "written.toml"
        written.write_text(text)
        broken: list[str] = []
        checked = guarded(lambda: broken.extend(check_spec(str(written), [], False)))
        case.violations += broken
        if checked.trace:
            case.violations.append(f"the written spec raised: {checked.trace.splitlines()[-1]}")
        elif checked.code != 0 and not _proposed_command(checked.message):
            case.violations.append(f"the written spec does not load: {checked.message[:300]}")
        elif re.search(r"^\s*allow_commands\s*=\s*true", text, re.MULTILINE):
            case.violations.append("the written spec opts in to commands")


def check_spec(source: str, overrides: list[str], quick: bool) -> list[str]:
    """What `fslab run` checks before it creates anything (nothing runs); returns the
    properties broken: an option that needs the opt-in passing without it."""
    from fslab.measure import plan
    from fslab.spec.load import load_spec
    from fslab.spec.model import workload_axes
    from fslab.spec.points import expand_points
    from fslab.workload.fio import trust as fio_trust
    from fslab.workload.fio.plan import fio_options
    from fslab.workload.fio.spec import FioWorkload

    spec, _ = load_spec(source, overrides=overrides, quick=quick)
    plan.check_workload(spec)
    points = expand_points(spec)
    if not isinstance(spec.workload, FioWorkload) or spec.workload.allow_commands:
        return []
    broken = []
    for sweep in {tuple(sorted(p.sweep_dict.items())): p.sweep_dict for p in points}.values():
        options = fio_options(spec.workload, workload_axes(sweep), spec.run_shape)
        for found in fio_trust.needs_opt_in(fio_trust.findings(options)):
            broken.append(f"spec runs {found.shown} without allow_commands")
    return broken


SPEC_PATHS = [
    "name",
    "description",
    "target.kind",
    "target.size",
    "target.path",
    "target.limits.write_iops",
    "target.limits.write_bps",
    "filesystems.0.label",
    "filesystems.0.type",
    "filesystems.0.mkfs_options",
    "filesystems.0.mount_options",
    "filesystems.0.description",
    "filesystems.1.label",
    "filesystems.9.type",
    "workload.kind",
    "workload.options.rw",
    "workload.options.bs",
    "workload.options.numjobs",
    "workload.options.size",
    "workload.options.exec_prerun",
    "workload.options.ioengine",
    "workload.options.filename",
    "workload.options.directory",
    "workload.command_line",
    "workload.job_file",
    "workload.allow_commands",
    "workload.bs",
    "workload.count",
    "sweep.numjobs",
    "sweep.bs",
    "sweep.fill_percent",
    "sweep.fill_leave_free",
    "sweep.kernel",
    "sweep.cpus",
    "sweep.exec_prerun",
    "fill.percent",
    "run.repeat",
    "run.warmup",
    "run.runtime",
    "run.ramp",
    "run.order",
    "run.timeout",
    "collect.perf",
    "collect.perf.frequency",
    "collect.offcpu",
    "quick.set",
    "quick.filesystems",
    "vm.kernel",
    "vm.cpus",
    "vm.memory",
    "reported.source",
    "",
    ".",
    "a..b",
    "filesystems.-1.type",
    "filesystems.99999999999999999999.type",
    "x" * 300,
]


class SpecSurface(Surface):
    name = "spec"

    def __init__(self, rng: random.Random, sandbox: Sandbox, cli: Cli) -> None:
        super().__init__(rng, sandbox, cli)
        from fslab.spec.load import PRESET_DIR

        paths = sorted(PRESET_DIR.glob("*.toml")) + sorted(
            (DATA / "corpus" / "specs").glob("*.toml")
        )
        self.seeds = {p.name: p.read_text() for p in paths}
        self.seeds.update(extra_specs(self.canaries[0]))
        self.names = sorted(self.seeds)
        self.pool = [line for text in self.seeds.values() for line in text.split("\n") if line]
        self.junk = [v for _, v in toml_junk(self.canaries[0])]
        self.pool += [f"k{i} = {v}" for i, v in enumerate(self.junk)]

    def _value(self) -> Any:
        c = self.canary()
        pool: list[Any] = [
            -1,
            0,
            2**63 - 1,
            -(2**63),
            1e308,
            float("inf"),
            float("nan"),
            0.5,
            True,
            False,
            "",
            "x" * 100000,
            f"touch {c}",
            f"$(touch {c})",
            "/dev/sda",
            "../../etc",
            "1E",
            "-5g",
            "999999T",
            "99999999999h",
            [],
            [1, "a", True],
            list(range(self.rng.choice((10, 1000, 10001, 100000)))),
            [str(i) + "k" for i in range(self.rng.choice((3, 5000)))],
            {},
            {"a": {"b": {"c": 1}}},
            {"exec_prerun": f"touch {c}"},
            [[1, 2], [3]],
        ]
        return self.rng.choice(pool + self.mutator.hostile[:20])

    def _mutate_tree(self, data: dict[str, Any]) -> list[str]:
        labels = []
        for _ in range(self.rng.randint(1, 4)):
            op = self.rng.choice(("replace", "replace", "add", "delete", "option", "sweep", "fs"))
            labels.append(op)
            if op in ("replace", "delete"):
                parent, key = random_slot(self.rng, data)
                if parent is None:
                    continue
                if op == "delete":
                    if isinstance(parent, dict):
                        parent.pop(key, None)
                    elif isinstance(parent, list) and parent:
                        parent.pop(int(key) if isinstance(key, int) else 0)
                else:
                    parent[key] = self._value()
            elif op == "add":
                parent, _ = random_slot(self.rng, data, tables_only=True)
                if isinstance(parent, dict):
                    parent[
                        self.rng.choice(("x", "exec_prerun", "allow_commands", "Ω", "a.b", ""))
                    ] = self._value()
            elif op == "option":
                workload = data.setdefault("workload", {})
                if isinstance(workload, dict):
                    options = workload.setdefault("options", {})
                    if isinstance(options, dict):
                        name = self.rng.choice(
                            (
                                "exec_prerun",
                                "ioengine",
                                "write_iolog",
                                "filename",
                                "trigger",
                                "numjobs",
                                "bs",
                                "size",
                                "directory",
                                "output",
                                "cgroup",
                                "include",
                                "mem",
                                "nonsense_option",
                                "name",
                                "runtime",
                            )
                        )
                        options[name] = self.rng.choice(
                            (
                                f"touch {self.canary()}",
                                "exec",
                                self.canary(),
                                "1000000000",
                                f"mmaphuge:{self.canary()}",
                                "0",
                                "-1",
                                "$(nproc)",
                            )
                        )
                    if self.rng.random() < 0.2:
                        workload["allow_commands"] = self.rng.choice((True, "yes", 1, False))
            elif op == "sweep":
                sweep = data.setdefault("sweep", {})
                if isinstance(sweep, dict):
                    axis = self.rng.choice(
                        (
                            "numjobs",
                            "bs",
                            "iodepth",
                            "fill_percent",
                            "exec_prerun",
                            "directory",
                            "kernel",
                            "cpus",
                            "x",
                        )
                    )
                    size = self.rng.choice(
                        (1, 2, 50, 101, 5000, 10**6 if self.rng.random() < 0.05 else 20)
                    )
                    sweep[axis] = self.rng.choice(
                        (
                            [i + 1 for i in range(size)],
                            [f"{i}k" for i in range(size)],
                            [f"touch {self.canary()}"],
                            [1] * size,
                            [],
                        )
                    )
            elif op == "fs":
                count = self.rng.choice((0, 2, 100, 10001 if self.rng.random() < 0.05 else 3))
                data["filesystems"] = [
                    {"label": f"f{i}", "type": self.rng.choice(("ext4", "xfs", "btrfs", "zfs"))}
                    for i in range(count)
                ]
        return labels

    def _overrides(self) -> list[str]:
        overrides = []
        for _ in range(self.rng.choice((1, 1, 2, 3))):
            key = self.rng.choice(SPEC_PATHS)
            raw = self.rng.choice(self.junk + self.mutator.hostile[:30])
            overrides.append(f"{key}={raw}" if self.rng.random() < 0.95 else key)
        return overrides

    def case(self, index: int) -> Case:
        from fslab.spec.load import MAX_SPEC_BYTES

        name = self.rng.choice(self.names)
        labels = [name]
        text = self.seeds[name]
        if self.rng.random() < 0.3:
            text, ops = self.mutator.text(text, list(self.seeds.values()), self.pool)
            labels += [f"text:{op}" for op in ops]
        else:
            data = tomllib.loads(text)
            labels += self._mutate_tree(data)
            text = toml_text(data)
        if self.rng.random() < 1 / 2000:
            text = text + "\n# " + "x" * (MAX_SPEC_BYTES + 10)
            labels.append("huge")
        overrides = self._overrides() if self.rng.random() < 0.5 else []
        if overrides:
            labels.append(f"--set x{len(overrides)}")
        quick = self.rng.random() < 0.2
        data_bytes = encode(text, self.rng)
        path = self.sandbox.inputs / ("spec.toml" if self.rng.random() < 0.95 else "spec.txt")
        source = (
            str(path)
            if self.rng.random() < 0.97
            else self.rng.choice(("ext4-fsync-storm", "nope", "", "../x"))
        )
        jobfile = self.sandbox.inputs / "job.fio"
        job_text = (
            self.rng.choice(fio_lines(self.canary())[26:33])
            if self.rng.random() < 0.5
            else ("".join(f"[j{i}]\nrw=write\n" for i in range(self.rng.choice((2, 3000)))))
        )
        job_bytes = encode(job_text, self.rng)
        if self.rng.random() < 0.01:
            job_bytes = b"[j]\nrw=write\n" + b"#" * (1024**2 + 10)
        saved = {"spec.toml": data_bytes, "job.fio": job_bytes}
        if overrides:
            saved["overrides.json"] = json.dumps(overrides).encode("utf-8", "surrogatepass")

        def run() -> Outcome:
            path.write_bytes(data_bytes)
            jobfile.write_bytes(saved["job.fio"])
            outcome = guarded(lambda: case.violations.extend(check_spec(source, overrides, quick)))
            return outcome

        case = Case(" ".join(labels), run, saved)
        return case


def extra_specs(canary: str) -> dict[str, str]:
    base = '[target]\nsize = "1GiB"\n[[filesystems]]\nlabel = "e"\ntype = "ext4"\n'
    return {
        "dd.toml": f'name = "dd"\n{base}[workload]\nkind = "dd"\nbs = "1M"\ncount = 16\n'
        '[sweep]\nbs = ["4k", "1M"]\n',
        "cmdline.toml": f'name = "c"\n{base}[workload]\nkind = "fio"\n'
        'command_line = "fio --name=x --rw=randwrite --bs=16k --size=4m --fsync=1"\n'
        "[sweep]\nnumjobs = [1, 4]\n",
        # job_file is read from cwd, two levels under the sandbox
        "jobfile.toml": f'name = "j"\n{base}[workload]\nkind = "fio"\n'
        'job_file = "../../../inputs/job.fio"\n',
        "optin.toml": f'name = "o"\n{base}[workload]\nkind = "fio"\nallow_commands = true\n'
        f'[workload.options]\nrw = "write"\nexec_prerun = "touch {canary}"\n',
    }


def toml_text(data: dict[str, Any]) -> str:
    """A table as TOML, every nested table inline (tomlkit takes minutes on 10^6 values)."""

    def key(k: str) -> str:
        return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int):
            return str(v)
        if isinstance(v, float):
            return (
                "nan"
                if v != v
                else ("inf" if v > 0 else "-inf")
                if v in (float("inf"), float("-inf"))
                else repr(v)
            )
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{key(str(k))} = {value(x)}" for k, x in v.items()) + "}"
        return json.dumps(str(v))

    return "".join(f"{key(k)} = {value(v)}\n" for k, v in data.items())


def toml_junk(canary: str) -> list[tuple[str, str]]:
    values = [
        "1",
        "-1",
        "0",
        "9223372036854775807",
        "9223372036854775808",
        "1e999",
        "nan",
        "inf",
        "true",
        '"x"',
        '"unterminated',
        "'''",
        "[1, 2, 3]",
        "[" * 500,
        "[" + ",".join(str(i) for i in range(20000)) + "]",
        "{a = 1}",
        "{exec_prerun = 'touch " + canary + "'}",
        f'"touch {canary}"',
        f'"$(touch {canary})"',
        "1979-05-27T07:32:00Z",
        "[[1], [2]]",
        '"/dev/sda"',
        '"ext9"',
        '"9999999T"',
        '"-1s"',
        '""',
        "",
        "=",
        "\x00",
        "\udcff",
    ]
    return [(f"k{i}", v) for i, v in enumerate(values)]


def random_slot(rng: random.Random, data: Any, tables_only: bool = False) -> tuple[Any, Any]:
    """A random (container, key) inside a nested structure."""
    node: Any = data
    parent: Any = None
    key: Any = None
    for _ in range(rng.randint(1, 6)):
        if isinstance(node, dict) and node:
            parent, key = node, rng.choice(list(node))
        elif isinstance(node, list) and node:
            parent, key = node, rng.randrange(len(node))
        else:
            break
        child = parent[key]
        if tables_only and not isinstance(child, dict):
            break
        node = child
        if rng.random() < 0.3:
            break
    if tables_only:
        return (node if isinstance(node, dict) else data), None
    return parent, key


class ImportSurface(Surface):
    name = "import"

    def __init__(self, rng: random.Random, sandbox: Sandbox, cli: Cli) -> None:
        super().__init__(rng, sandbox, cli)
        # matplotlib builds its font cache (fc-list) once, when first used: before the audit
        import matplotlib.font_manager  # noqa: F401

        source = json.loads((DATA / "campaign_fsync_nocollect.json").read_text())
        v1 = dict(source, points=source["points"][:4])
        self.db_count = 0
        self.db = self._new_db()
        seed_db = str(self.sandbox.root / "seed.sqlite")
        done = self.cli(
            ["import", str(self._write("seed.json", json.dumps(v1).encode())), "--db", seed_db]
        )
        if done.code != 0:
            raise RuntimeError(f"the seed export does not import: {done.message} {done.trace}")
        exported = self.cli(["export", "1", "--db", seed_db])
        self.seeds = {"v1": v1, "v2": json.loads(exported.stdout)}
        self.hostile = self.mutator.hostile

    def _new_db(self) -> str:
        self.db_count += 1
        return str(self.sandbox.root / "db" / f"import-{self.db_count}.sqlite")

    def _write(self, name: str, data: bytes) -> Path:
        path = self.sandbox.inputs / name
        path.write_bytes(data)
        return path

    def _name(self) -> str:
        return self.rng.choice([*self.hostile, "plain", "a/b", "../../x", "..", "x\x00y"])

    def _mutate(self, data: dict[str, Any]) -> list[str]:
        labels = []
        for _ in range(self.rng.randint(1, 4)):
            op = self.rng.choice(
                (
                    "replace",
                    "replace",
                    "delete",
                    "add",
                    "name",
                    "name",
                    "name",
                    "points",
                    "text-field",
                )
            )
            labels.append(op)
            if op in ("replace", "delete"):
                parent, key = random_slot(self.rng, data)
                if parent is None:
                    continue
                if op == "delete":
                    if isinstance(parent, dict):
                        parent.pop(key, None)
                    else:
                        parent.pop(key)
                else:
                    parent[key] = self._json_value()
            elif op == "add":
                parent, _ = random_slot(self.rng, data, tables_only=True)
                if isinstance(parent, dict):
                    parent[self._name()] = self._json_value()
            elif op == "name":
                self._rename(data, labels)
            elif op == "points":
                points = data.get("points")
                if isinstance(points, list) and points and isinstance(points[0], dict):
                    how = self.rng.choice(("dup", "clear", "seq", "many"))
                    labels[-1] = f"points:{how}"
                    if how == "dup":
                        points.append(json.loads(json.dumps(points[0])))
                    elif how == "clear":
                        points.clear()
                    elif how == "seq":
                        points[0]["seq"] = self.rng.choice((-1, 10**18, "1", None, 1.5))
                    else:
                        many = 2000 if self.rng.random() < 0.01 else 100
                        labels[-1] = f"points:many({many})"
                        data["points"] = [json.loads(json.dumps(points[0])) for _ in range(many)]
                        for i, p in enumerate(data["points"]):
                            p["seq"] = i
            else:
                points = data.get("points")
                if isinstance(points, list) and points and isinstance(points[0], dict):
                    field_name = self.rng.choice(
                        ("error", "stderr", "started_at", "status", "role")
                    )
                    points[0][field_name] = self._name()
        return labels

    def _rename(self, data: dict[str, Any], labels: list[str]) -> None:
        name = self._name()
        campaign = data.get("campaign") if isinstance(data.get("campaign"), dict) else {}
        listed = data.get("points")
        points = [p for p in listed if isinstance(p, dict)] if isinstance(listed, list) else []
        where = self.rng.choice(
            (
                "campaign",
                "spec",
                "label",
                "config",
                "artifact",
                "metric",
                "collector",
                "sweep",
                "host",
                "command",
                "device",
                "fs_type",
            )
        )
        labels[-1] = f"name:{where}"
        spec = campaign.get("spec") if isinstance(campaign.get("spec"), dict) else {}
        if where == "campaign":
            campaign["name"] = name
        elif where == "spec":
            spec["name"] = name
        elif where == "label":
            filesystems = spec.get("filesystems")
            for fs in filesystems if isinstance(filesystems, list) else []:
                if isinstance(fs, dict):
                    old = fs.get("label")
                    fs["label"] = name
                    for p in points:
                        if p.get("config") == old:
                            p["config"] = name
                    break
        elif where == "config":
            for p in points:
                p["config"] = name
        elif where in ("artifact", "metric", "collector"):
            key = {"artifact": "artifacts", "metric": "metrics", "collector": "collectors"}[where]
            for p in points:
                table = p.get(key)
                if isinstance(table, dict):
                    table[name] = {
                        "artifact": "x" * self.rng.choice((1, 100000)),
                        "metric": 1.0,
                        "collector": ["failed", name],
                    }[where]
        elif where == "sweep":
            for p in points:
                if isinstance(p.get("sweep"), dict):
                    p["sweep"][name] = 1
        elif where == "host":
            campaign["host_name"] = name
            if isinstance(campaign.get("host"), dict):
                campaign["host"]["hostname"] = name
        elif where == "command":
            for p in points:
                p["commands"] = [
                    {
                        "argv": ["sh", "-c", f"touch {self.canary()}", name],
                        "returncode": 0,
                        "seconds": 0.1,
                    }
                ]
        elif where == "device":
            campaign["device"] = {"kind": "device", "path": name, "model": name}
        else:
            for p in points:
                p["fs_type"] = name

    def _json_value(self) -> Any:
        pool: list[Any] = [
            None,
            True,
            0,
            -1,
            10**30,
            1.5,
            float("nan"),
            float("inf"),
            "",
            [],
            {},
            "x" * self.rng.choice((10, 100000)),
            [[[]]],
            {"a": None},
            [1, "a"],
            {"status": "ok"},
            "ok",
            "pending",
            "failed",
            "complete",
        ]
        return self.rng.choice([*pool, self._name()])

    def case(self, index: int) -> Case:
        if index % 500 == 0 and index:
            self.db = self._new_db()
        which = self.rng.choice(("v1", "v2", "v2"))
        labels = [which]
        data = json.loads(json.dumps(self.seeds[which]))
        roll = self.rng.random()
        if roll < 1 / 2000:
            labels.append("huge 100MB")
            data["points"][0]["stderr"] = "x" * (100 * 1024**2)
            raw = json.dumps(data).encode()
        elif roll < 0.25:
            text = json.dumps(data)
            how = self.rng.choice(
                ("cut", "bytes", "nest", "bom", "number", "word", "not-utf8", "empty", "top")
            )
            labels.append(f"text:{how}")
            if how == "cut":
                raw = text[: self.rng.randrange(len(text))].encode()
            elif how == "bytes":
                raw = self.mutator._bytes(text).encode("utf-8", "surrogatepass")
            elif how == "nest":
                depth = self.rng.choice((100, 10000, 200000))
                raw = ("[" * depth + "]" * depth).encode()
            elif how == "bom":
                raw = b"\xef\xbb\xbf" + text.encode()
            elif how == "number":
                raw = self.mutator._number(text).encode()
            elif how == "word":
                raw = self.mutator._word(text).encode("utf-8", "surrogatepass")
            elif how == "not-utf8":
                raw = text.encode()[:1000] + b"\xff\xfe" + text.encode()[1000:]
            elif how == "empty":
                raw = b""
            else:
                raw = json.dumps(
                    self.rng.choice(([], None, 1, "x", {"format": "fslab-campaign"}))
                ).encode()
        else:
            labels += self._mutate(data)
            raw = json.dumps(data, allow_nan=True).encode("utf-8", "surrogatepass")
        fleet = self.rng.random() < 0.1
        if fleet:
            labels.append("via fleet fetch")
        case = Case(" ".join(labels), lambda: Outcome(0), saved={"export.json": raw})

        def run() -> Outcome:
            path = self._write("export.json", raw)
            if fleet:
                return self._fleet(raw)
            outcome = self.cli(["import", str(path), "--db", self.db])
            if outcome.code != 0 or outcome.trace:
                return outcome
            match = re.search(r"imported as campaign (\d+)", outcome.stdout)
            if not match:
                case.violations.append(f"import said: {outcome.stdout[:200]!r}")
                return outcome
            return self._afterwards(match.group(1), case)

        case.run = run
        return case

    def _fleet(self, raw: bytes) -> Outcome:
        from fslab.fleet.run import _import_fetched
        from fslab.fleet.state import HostOutcome

        fetch = self.sandbox.inputs / "fetched"
        shutil.rmtree(fetch, ignore_errors=True)
        fetch.mkdir()
        (fetch / "alpha.json").write_bytes(raw)
        outcomes = [HostOutcome("alpha", "done", "run the campaign")]
        return guarded(lambda: _import_fetched(self.db, fetch, outcomes, lambda line: None))

    def _afterwards(self, cid: str, case: Case) -> Outcome:
        """What reads the imported campaign back: every step must end cleanly."""
        db = ["--db", self.db]
        steps: list[list[str]] = [
            ["show", cid, *db],
            ["report", cid, *db, "--format", "text"],
            ["report", cid, *db, "--format", "json"],
        ]
        if self.rng.random() < 0.05:
            steps.append(
                [
                    "report",
                    cid,
                    *db,
                    "--format",
                    "html",
                    "-o",
                    str(self.sandbox.root / "out" / "r.html"),
                ]
            )
        if self.rng.random() < 0.1:
            steps.append(["report", cid, *db, "--format", "reply"])
        if self.rng.random() < 0.1:
            steps.append(["list", *db])
        for analysis in (["scale", cid], ["diagnose", cid], ["compare", cid, "--by", "filesystem"]):
            if self.rng.random() < 0.05:
                steps.append([*analysis, *db])
        export = self.rng.random() < 0.1
        if export:
            steps.append(["export", cid, *db])
        last = Outcome(0)
        (self.sandbox.root / "out").mkdir(exist_ok=True)
        for argv in steps:
            outcome = self.cli(argv)
            if outcome.trace:
                outcome.message = f"{' '.join(argv[:3])}: {outcome.message}"
                return outcome
            if outcome.code not in (0, 1, 2):
                return outcome
            self._properties(argv, outcome, case)
            last = outcome
            if argv[0] == "export" and outcome.code == 0:
                again = self.cli(
                    ["import", str(self._write("again.json", outcome.stdout.encode())), *db]
                )
                if again.trace or again.code != 0:
                    case.violations.append(
                        "an accepted import, exported, does not import again: "
                        + again.message[:200]
                    )
        return Outcome(0, last.message)

    def _properties(self, argv: list[str], outcome: Outcome, case: Case) -> None:
        text = outcome.stdout
        if "html" in argv:
            html = self.sandbox.root / "out" / "r.html"
            text = html.read_text(errors="replace") if html.exists() else ""
            if f"<script>{MARKUP}" in text or f"onerror=alert('{MARKUP}')" in text:
                case.violations.append("html report: a name's markup is not escaped")
            return
        if "\x1b" in text and "json" not in argv:
            case.violations.append(f"{argv[0]}: a terminal escape from the import is printed")


HOST_NAMES = ("a b", "-x", ".hidden", "a/b", "host.example.com", "::1", "[::1]", "h" * 300, "ünï")


class InventorySurface(Surface):
    name = "inventory"

    def __init__(self, rng: random.Random, sandbox: Sandbox, cli: Cli) -> None:
        super().__init__(rng, sandbox, cli)
        # ansible's display runs ldconfig once, when first imported: before the audit
        import ansible.inventory.manager
        import ansible.utils.display  # noqa: F401
        import yaml

        self.yaml = yaml
        self.dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        self.playbook = load_playbook()
        self.hostile = self.mutator.hostile

    def _base(self) -> dict[str, Any]:
        local = {"ansible_connection": "local", "ansible_python_interpreter": "/usr/bin/python3"}
        return {
            "all": {
                "hosts": {
                    "alpha": {
                        **local,
                        "fslab_home": "/var/lib/fslab-a",
                        "fslab_command": "/usr/bin/fslab",
                        "fslab_install_debs": False,
                    },
                    "beta": {
                        **local,
                        "fslab_home": "/var/lib/fslab-b",
                        "fslab_environment": {"FSLAB_FAULTS": '{"stage": "x"}'},
                    },
                    "10.0.0.7": {
                        "ansible_host": "127.0.0.1",
                        "ansible_port": 1,
                        "ansible_ssh_common_args": "-o ConnectTimeout=3 -o BatchMode=yes",
                    },
                },
                "children": {
                    "disks": {
                        "hosts": {
                            "gamma": {
                                "fslab_allow_devices": ["/dev/nvme1n1"],
                                "fslab_target": "device:/dev/nvme1n1",
                            }
                        },
                        "vars": {
                            "fslab_db": "postgresql://fslab@127.0.0.1/lab",
                            "fslab_path": "/usr/sbin:/usr/bin",
                        },
                    },
                },
            }
        }

    def _value(self) -> Any:
        pool: list[Any] = [
            1,
            -1,
            True,
            None,
            [],
            {},
            ["/dev/sda", "/dev/../etc/passwd"],
            {"A": "$(touch x)"},
            {"1BAD": "x", "A B": 1},
            "x" * 5000,
            "/var/lib/fslab x",
            "/var/lib/$(touch " + self.canary() + ")",
            "/x'; touch " + self.canary() + "; '",
            "ram",
            "file:relative",
            "device:/dev/sda;reboot",
            "/usr/bin/env python3",
            "auto_silent",
            "-o ProxyCommand='touch " + self.canary() + "'",
            "-F /etc/ssh/evil",
            "-oProxyCommand=nc",
            "{{ lookup('pipe', 'touch " + self.canary() + "') }}",
        ]
        return self.rng.choice(pool + self.hostile)

    def _mutate(self, inv: dict[str, Any]) -> list[str]:
        labels = []
        hosts = inv["all"]["hosts"]
        group = inv["all"]["children"]["disks"]
        for _ in range(self.rng.randint(1, 4)):
            op = self.rng.choice(
                ("hostname", "hostname", "var", "var", "var", "groupvar", "unknown", "many", "type")
            )
            labels.append(op)
            if op == "hostname":
                old = self.rng.choice(list(hosts))
                hosts[self.rng.choice([*self.hostile, *HOST_NAMES])] = hosts.pop(old)
            elif op == "var":
                host = hosts[self.rng.choice(list(hosts))]
                name = self.rng.choice(
                    (
                        "fslab_allow_devices",
                        "fslab_target",
                        "fslab_home",
                        "fslab_command",
                        "fslab_install_debs",
                        "fslab_db",
                        "fslab_path",
                        "fslab_environment",
                        "ansible_host",
                        "ansible_python_interpreter",
                        "ansible_ssh_common_args",
                        "ansible_user",
                        "other",
                    )
                )
                host[name] = self._value()
            elif op == "groupvar":
                group["vars"][
                    self.rng.choice(("fslab_home", "fslab_db", "ansible_become_exe", "x"))
                ] = self._value()
            elif op == "unknown":
                hosts["alpha" if "alpha" in hosts else next(iter(hosts))][
                    self.rng.choice(("fslab_homer", "fslab_fleet_key", "fslab_", "fslab_x"))
                ] = "1"
            elif op == "many":
                for i in range(1200 if self.rng.random() < 0.05 else 50):
                    hosts[f"h{i}"] = {"ansible_connection": "local"}
            else:
                inv["all"]["hosts"] = self.rng.choice(([], "x", None, {"a": "b"}))
                break
        return labels

    def case(self, index: int) -> Case:
        inv = self._base()
        labels = self._mutate(inv)
        form = self.rng.choice(("yaml", "yaml", "ini"))
        try:
            text = (
                to_ini(inv)
                if form == "ini"
                else self.yaml.dump(inv, Dumper=self.dumper, allow_unicode=True)
            )
        except Exception:
            text = json.dumps(inv)
        if self.rng.random() < 0.2:
            text, ops = self.mutator.text(text, [text], text.split("\n"))
            labels += [f"text:{op}" for op in ops]
        if self.rng.random() < 1 / 2000:
            text += "\n#" + "x" * (2 * 1024**2)
            labels.append("huge")
        labels.insert(0, form)
        raw = encode(text, self.rng)
        directory = self.sandbox.inputs / "inventory"
        path = directory / ("hosts.yml" if form == "yaml" else "hosts.ini")
        host_vars = self.rng.random() < 0.1
        if host_vars:
            labels.append("host_vars")
        case = Case(" ".join(labels), lambda: Outcome(0), saved={path.name: raw})

        def run() -> Outcome:
            from fslab.fleet.inventory import read_inventory

            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir()
            path.write_bytes(raw)
            if host_vars:
                (directory / "host_vars").mkdir()
                (directory / "host_vars" / "alpha.yml").write_text(
                    f"fslab_home: \"{{{{ lookup('pipe', 'touch {self.canary()}') }}}}\"\n"
                    if self.rng.random() < 0.5
                    else "fslab_home: /x/$(touch y)\n"
                )
            found: list[Any] = []
            outcome = guarded(lambda: found.extend(read_inventory(path)))
            if outcome.code == 0 and outcome.trace is None:
                for host in found[:60]:  # a thousand plain hosts render alike
                    case.violations += check_rendered(
                        self.playbook, host.name, dict(host.variables)
                    )
            return outcome

        case.run = run
        return case


def to_ini(inv: dict[str, Any]) -> str:
    def line(name: str, variables: dict[str, Any]) -> str:
        parts = [str(name)]
        for key, value in variables.items():
            shown = json.dumps(value) if not isinstance(value, str) else shlex.quote(value)
            parts.append(f"{key}={shown}")
        return " ".join(parts)

    hosts = inv["all"]["hosts"]
    out = ["[ungrouped]"]
    if isinstance(hosts, dict):
        out += [line(n, v if isinstance(v, dict) else {}) for n, v in hosts.items()]
    for group, body in inv["all"]["children"].items():
        out.append(f"[{group}]")
        out += [line(n, v) for n, v in body["hosts"].items()]
        out.append(f"[{group}:vars]")
        out += [line(k, {}).split()[0] + "=" + shlex.quote(str(v)) for k, v in body["vars"].items()]
    return "\n".join(out) + "\n"


def load_playbook() -> dict[str, Any]:
    """The shipped playbook's play vars, shell tasks and fetch destination, as templates."""
    import yaml

    from fslab.fleet import run as fleet_run

    text = (Path(fleet_run.__file__).parent / "playbook.yml").read_text()
    play = yaml.safe_load(text)[0]
    shells, fetches = [], []

    def walk(tasks: list[dict[str, Any]]) -> None:
        for task in tasks:
            if "block" in task:
                walk(task["block"])
            for key, value in task.items():
                if key in ("ansible.builtin.shell", "shell"):
                    shells.append(
                        (task.get("name", ""), value if isinstance(value, str) else value["cmd"])
                    )
                if key in ("ansible.builtin.fetch", "fetch"):
                    fetches.append(value["dest"])

    walk(play["tasks"])
    return {"vars": play["vars"], "shells": shells, "fetches": fetches}


def check_rendered(playbook: dict[str, Any], host: str, variables: dict[str, Any]) -> list[str]:
    """Render the playbook's shell tasks with a host's values and with plain ones: the
    shell's active characters must be the same (a value never becomes shell syntax), and
    the fetched export must land inside the fetch directory."""
    fetch_dir = "/controller/fetched"
    found = []
    plain = {k: _plain(v, i) for i, (k, v) in enumerate(variables.items())}
    for name, template in playbook["shells"]:
        try:
            real = render_task(playbook, template, host, variables, fetch_dir)
            safe = render_task(playbook, template, "plainhost", plain, fetch_dir)
        except Exception as exc:
            found.append(f"task '{name}': does not render ({type(exc).__name__}: {exc})"[:300])
            continue
        if active(real) != active(safe):
            found.append(
                f"task '{name}': a value from the inventory changes the shell script: "
                f"{real[:300]!r}"
            )
    for template in playbook["fetches"]:
        dest = render_task(playbook, template, host, variables, fetch_dir)
        if os.path.dirname(os.path.normpath(dest)) != fetch_dir:
            found.append(f"fetch: the export lands outside the fetch directory: {dest!r}")
    return found


def _plain(value: Any, i: int) -> Any:
    if isinstance(value, str):
        return "/p" if value.startswith("/") else f"p{i}"
    if isinstance(value, list):
        return [_plain(v, i) for v in value]
    if isinstance(value, dict):
        return {f"K{j}": _plain(v, i) for j, v in enumerate(value.values())}
    return value


_JINJA: dict[str, Any] = {}


def _template(text: str) -> Any:
    """A compiled template, with the filters the playbook's tasks use (as ansible's)."""
    if "env" not in _JINJA:
        import jinja2

        env = jinja2.Environment(undefined=jinja2.ChainableUndefined)
        env.filters.update(
            quote=lambda v: shlex.quote(str(v)),
            basename=lambda v: os.path.basename(str(v)),
            from_json=json.loads,
            bool=bool,
            regex_replace=lambda v, a, b: re.sub(a, b, str(v)),
        )
        _JINJA["env"] = env
    if text not in _JINJA:
        _JINJA[text] = _JINJA["env"].from_string(text)
    return _JINJA[text]


def render_task(
    playbook: dict[str, Any], template: str, host: str, variables: dict[str, Any], fetch_dir: str
) -> str:
    context: dict[str, Any] = {
        **variables,
        "inventory_hostname": host,
        "fslab_fleet_key": "0123456789ab",
        "fslab_fleet_spec": "/controller/spec.toml",
        "fslab_fleet_spec_text": "name = 'x'",
        "fslab_fleet_run_args": ["--quick"],
        "fslab_fleet_db": "postgresql://fslab@127.0.0.1/lab",
        "fslab_fleet_wheel": "/controller/dist/fslab-0.1.0-py3-none-any.whl",
        "fslab_fleet_wheel_sha": "0123456789ab",
        "fslab_fleet_fetch_dir": fetch_dir,
        "fslab_fleet_debian_packages": ["fio", "xfsprogs"],
        "run": {"stdout": json.dumps({"campaign": {"id": 7}})},
        "results_db": "",
    }
    for name in ("home", "fslab", "shared_db", "spec_path"):  # play vars, in order
        context[name] = _template(str(playbook["vars"][name])).render(context)
    return str(_template(template).render(context))


def active(script: str) -> str:
    """The characters a POSIX shell acts on: unquoted specials and whitespace runs, and
    `$`, backquote and backslash inside double quotes."""
    out = []
    state = ""
    i = 0
    while i < len(script):
        ch = script[i]
        if state == "'":
            if ch == "'":
                state = ""
        elif state == '"':
            if ch == '"':
                state = ""
            elif ch == "\\":
                out.append(ch)
                i += 1
            elif ch in "$`":
                out.append(ch)
        elif ch in "'\"":
            state = ch
        elif ch == "\\":
            i += 1
        elif ch in ";&|<>()$`*?[]{}~#\n":
            out.append(ch)
        elif ch in " \t" and (not out or out[-1] != " "):
            out.append(" ")
        i += 1
    return "".join(out)


class DbUrlSurface(Surface):
    name = "dburl"

    def __init__(self, rng: random.Random, sandbox: Sandbox, cli: Cli) -> None:
        super().__init__(rng, sandbox, cli)
        self.closed_ports = ["1", "9", "5432", "54321", "65535"]
        # a database file may be named anything, a canary's name too: no canaries here
        self.mutator.hostile = [w for w in self.mutator.hostile if CANARY not in w]

    def _sqlite_path(self) -> str:
        odd = self.rng.choice(
            (
                "x.db",
                "a b.db",
                "ü.db",
                "x\ny.db",
                "x;touch y.db",
                "$HOME.db",
                "~/x.db",
                "x%00y.db",
                "x?mode=ro",
                "x#f",
                "-x.db",
                "'.db",
                '".db',
                "a" * 300 + ".db",
                "d/" * 60 + "x.db",
                "x\udcff.db",
                ".db",
                "x.db/",
                "x:y.db",
                "file:x.db?mode=memory",
                "db",
                ":memory:",
                ".",
            )
        )
        base = self.rng.choice(("", str(self.sandbox.root / "dbs") + "/", "../", "./", "~/"))
        return base + odd

    def _pg_url(self) -> str:
        host = self.rng.choice(("127.0.0.1", "localhost", "[::1]", "", "127.0.0.1,localhost"))
        port = self.rng.choice([*self.closed_ports, "", "0", "-1", "99999", "abc", "5432x", ":"])
        user = self.rng.choice(("fslab", "", "u:p", "u:p@x", "%zz", "a b", "$(touch x)", "u:"))
        db = self.rng.choice(("lab", "", "a/b", "..", "x?y", "%00", "d" * 200, "lab;drop table x"))
        query = self.rng.choice(
            (
                "",
                "?sslmode=bogus",
                "?connect_timeout=100000",
                "?connect_timeout=-1",
                f"?host={self.sandbox.root}",
                "?host=/nonexistent",
                "?options=-c%20statement_timeout%3D0",
                "?application_name=%ff",
                "?x=1&x=2",
                "?=",
                f"?sslrootcert={self.sandbox.root}/no.crt&sslmode=verify-full",
                "?service=nope",
                f"?passfile={self.sandbox.root}/no.pgpass",
            )
        )
        scheme = self.rng.choice(
            (
                "postgresql",
                "postgresql",
                "postgres",
                "postgresql+psycopg",
                "postgresql+psycopg2",
                "POSTGRESQL",
                "postgresql+asyncpg",
            )
        )
        at = f"{user}@" if user else ""
        colon = f":{port}" if port else ""
        return f"{scheme}://{at}{host}{colon}/{db}{query}"

    def _other(self) -> str:
        return self.rng.choice(
            (
                "mysql://u@127.0.0.1:1/x",
                "sqlite://",
                "sqlite:///:memory:",
                f"sqlite:///{self.sandbox.root}/dbs/s.db",
                f"sqlite:///{self.sandbox.root}/no/such/dir/x.db",
                "file:///etc/passwd",
                "http://127.0.0.1:1/",
                "://",
                "postgresql://",
                "postgresql:///",
                "postgresql://[",
                "postgresql://u@[::1/x",
                "postgresql://:@:/",
                "x://y",
                "a://" + "b" * 5000,
                "postgresql://u@127.0.0.1:1/x\udcff",
                "",
                " ",
                "\t",
                "-",
                "--help",
            )
        )

    def case(self, index: int) -> Case:
        kind = self.rng.choice(("sqlite", "pg", "pg", "other"))
        value = {"sqlite": self._sqlite_path, "pg": self._pg_url, "other": self._other}[kind]()
        if self.rng.random() < 0.2:
            value, _ = self.mutator.text(value, [value], [value])
            kind += "+mutated"
        # argv and the environment hold no NUL, and no string over 128 KiB (MAX_ARG_STRLEN)
        value = value.replace("\x00", "")[: 128 * 1024 - 1]
        value = self._inside(value)
        command = self.rng.choice(
            (
                ["list"],
                ["list", "--json"],
                ["show"],
                ["show", "1"],
                ["export", "1"],
                ["store", "migrate"],
                ["list", "--host", "x"],
            )
        )
        via_env = self.rng.random() < 0.3
        argv = command if via_env else [*command, "--db", value]
        env = {"FSLAB_DB": value} if via_env else None
        label = f"{kind} {'env' if via_env else '--db'} {' '.join(command)}: {value[:120]!r}"

        def run() -> Outcome:
            if "\x00" in value:
                return Outcome(2, "fslab: NUL in argv (impossible)")
            return self.cli(argv, env=env)

        return Case(label, run, {"value.txt": value.encode("utf-8", "surrogatepass")})

    def _inside(self, value: str) -> str:
        """A SQLite path must stay in the sandbox (a path the user names is theirs to
        write): at most two '..' from cwd, which is two levels down."""
        path = value
        if "://" in value:  # read as fslab reads it: SQLAlchemy's URL
            from sqlalchemy import make_url

            try:
                url = make_url(value)
            except Exception:
                return value  # refused by fslab too
            if url.get_backend_name() != "sqlite":
                return value
            path = url.database or ""
        try:
            path = os.path.expanduser(path)
        except Exception:
            return value if "://" not in value else "x.db"
        if not self.sandbox.allowed(os.path.normpath(os.path.join(str(self.sandbox.cwd), path))):
            return "x.db"
        return value


SURFACE_CLASSES: dict[str, type[Surface]] = {
    "report": ReportSurface,
    "spec": SpecSurface,
    "import": ImportSurface,
    "inventory": InventorySurface,
    "dburl": DbUrlSurface,
}


# --------------------------------------------------------------------------- one surface


def _signature(trace: str) -> str:
    lines = [line.strip() for line in trace.strip().splitlines()]
    where = [line for line in lines if line.startswith("File ") and "/fslab/" in line]
    frame = (
        where[-1] if where else (next((x for x in reversed(lines) if x.startswith("File ")), ""))
    )
    frame = re.sub(r'File ".*?/(src/)?fslab/', 'File "fslab/', frame)
    return f"{lines[-1].split(':')[0] if lines else '?'} at {frame}"


def run_surface(
    name: str, count: int, seed: int, sandbox: Sandbox, budget: float, isolated: bool
) -> SurfaceResult:
    """Runs in the child: the surface's inputs one by one, counted."""
    result = SurfaceResult(name)
    uppers: list[tuple[str, Path]] = []
    if isolated:
        uppers = isolate(sandbox)
        result.isolation = "overlay"
    else:
        result.isolation = "snapshot"
    sandbox.enter()
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    rng = random.Random(f"{seed}-{name}")
    random.seed(f"{seed}-{name}-global")
    cli = Cli()
    surface = SURFACE_CLASSES[name](rng, sandbox, cli)
    audit = Audit(sandbox)
    audit.install()
    findings_dir = sandbox.root.parent / f"findings-{name}"

    def on_alarm(_signum: int, _frame: Any) -> None:
        raise InputTimeout()

    signal.signal(signal.SIGALRM, on_alarm)
    faulthandler.register(signal.SIGUSR1)  # kill -USR1 CHILD: where a stuck input is
    started = time.monotonic()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for index in range(count):
        try:
            case = surface.case(index)
        except Exception:  # the harness's own bug: said, and the next input made
            result.harness_errors.append(traceback.format_exc()[-2000:])
            continue
        t0 = time.monotonic()
        writes_before = len(audit.writes)
        signal.setitimer(signal.ITIMER_REAL, budget)
        try:
            outcome = case.run()
        except InputTimeout:  # where it was, then what it was
            outcome = Outcome(1, "", f"{traceback.format_exc()}InputTimeout: over {budget:g} s\n")
        except MemoryError:
            outcome = Outcome(1, "", traceback.format_exc())
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        seconds = time.monotonic() - t0
        result.inputs += 1
        audit.active = False
        if outcome.trace:
            result.tracebacks += 1
            _record(
                result, "traceback", _signature(outcome.trace), case, outcome.trace, findings_dir
            )
        elif outcome.code == 0:
            result.accepted += 1
        elif outcome.code == 2 and outcome.message:
            result.refused += 1
        else:
            result.failed += 1
        audit.active = False  # the harness's own writes (kept inputs) are not the input's
        for violation in case.violations:
            result.violations += 1
            _record(
                result, "violation", violation.split(":")[0][:80], case, violation, findings_dir
            )
        for path in audit.writes[writes_before:]:
            if os.path.lexists(path) and not any(path.startswith(r + "/") for r, _ in uppers):
                result.writes.append(f"{path} ({case.label[:100]})")
        if seconds > result.slowest_s:
            result.slowest_s, result.slowest_label = seconds, case.label[:160]
        if seconds > SLOW_S:  # kept to look at: bounded work should take seconds at most
            result.slow += 1
            if result.slow <= 5:
                _record(
                    result, "slow", f"slow #{result.slow}", case, f"{seconds:.1f} s", findings_dir
                )
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if rss > rss_before:
            rss_before = rss
            result.peak_label = case.label[:160]
        audit.active = True
    result.seconds = time.monotonic() - started
    audit.active = False
    result.peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result.processes = sorted(set(audit.processes))
    if uppers:
        result.writes += overlay_writes(uppers)
    result.canaries = find_canaries(sandbox, uppers)
    return result


def _record(
    result: SurfaceResult, kind: str, signature: str, case: Case, detail: str, findings_dir: Path
) -> None:
    key = f"{kind}: {signature}"
    result.distinct[key] = result.distinct.get(key, 0) + 1
    if result.distinct[key] > 1 or len(result.findings) >= 60:
        return
    where = findings_dir / f"{len(result.findings):03d}"
    where.mkdir(parents=True, exist_ok=True)
    for name, data in case.saved.items():
        (where / name).write_bytes(data[: 200 * 1024**2])
    (where / "finding.txt").write_text(f"{case.label}\n\n{detail}", errors="replace")
    result.findings.append(Finding(kind, signature, case.label[:300], detail[-3000:], str(where)))


def find_canaries(sandbox: Sandbox, uppers: list[tuple[str, Path]]) -> list[str]:
    found = []
    for path in sandbox.canary_paths():
        full = os.path.normpath(os.path.join(str(sandbox.cwd), path))
        if os.path.lexists(full):
            found.append(full)
    name = f"{CANARY}-{sandbox.token}"  # what `touch CANARY` makes (a db file may hold it)
    for top in [sandbox.root, *(upper for _, upper in uppers)]:
        for dirpath, dirnames, filenames in os.walk(top):
            found += [os.path.join(dirpath, n) for n in dirnames + filenames if n == name]
    return sorted(set(found))


def run_in_child(
    name: str, count: int, seed: int, base: Path, budget: float, isolated: bool
) -> SurfaceResult:
    """Fork a child for one surface (its namespaces, audit hook and rlimit die with it)."""
    sandbox = Sandbox(base / name / "sandbox", base / name / "overlay", f"{seed}")
    sandbox.root.mkdir(parents=True)
    before = snapshot([str(base)]) if not isolated else {}
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(reader)
        try:
            result = run_surface(name, count, seed, sandbox, budget, isolated)
        except BaseException:
            result = SurfaceResult(name, error=traceback.format_exc())
        payload = json.dumps(asdict(result)).encode()
        with os.fdopen(writer, "wb") as pipe:
            pipe.write(payload)
        os._exit(0)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        payload = pipe.read()
    _, status = os.waitpid(pid, 0)
    if not payload:
        return SurfaceResult(name, error=f"the child died (wait status {status})")
    data = json.loads(payload)
    data["findings"] = [Finding(**f) for f in data["findings"]]
    result = SurfaceResult(**data)
    if not isolated:
        after = snapshot([str(base)])
        result.writes += [p for p, v in after.items() if before.get(p) != v]
    return result


# --------------------------------------------------------------------------- printing


def table(results: list[SurfaceResult]) -> str:
    head = (
        "surface",
        "inputs",
        "accepted",
        "refused",
        "failed",
        "tracebacks",
        "violations",
        "writes outside",
        "canaries",
        "processes",
        "peak RSS MiB",
        "slowest s",
        f"over {SLOW_S:g} s",
        "wall s",
    )
    rows = [head]
    for r in results:
        rows.append(
            (
                r.surface,
                str(r.inputs),
                str(r.accepted),
                str(r.refused),
                str(r.failed),
                str(r.tracebacks),
                str(r.violations),
                str(len(r.writes)),
                str(len(r.canaries)),
                str(len(r.processes)),
                f"{r.peak_rss_mib:.0f}",
                f"{r.slowest_s:.2f}",
                str(r.slow),
                f"{r.seconds:.0f}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = []
    for n, row in enumerate(rows):
        lines.append(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def details(results: list[SurfaceResult], shown: int = 5) -> Iterator[str]:
    for r in results:
        if r.error:
            yield f"{r.surface}: the surface itself failed:\n{r.error}"
        for error in r.harness_errors[:3]:
            count = len(r.harness_errors)
            yield f"{r.surface}: the fuzzer failed to make an input ({count} times):"
            yield error
        yield (
            f"{r.surface}: slowest input {r.slowest_s:.2f} s ({r.slowest_label}); "
            f"peak RSS {r.peak_rss_mib:.0f} MiB (last raised by: {r.peak_label}); "
            f"watched by {r.isolation}"
        )
        for path in r.writes[:10]:
            yield f"  write outside: {path}"
        for path in r.canaries[:10]:
            yield f"  canary: {path}"
        for process in r.processes[:10]:
            yield f"  process started: {process}"
        order = {"traceback": 0, "violation": 1, "slow": 2}
        for f in sorted(r.findings, key=lambda f: order.get(f.kind, 3))[:shown]:
            yield f"  {f.kind} x{r.distinct.get(f'{f.kind}: {f.signature}', 1)}: {f.signature}"
            yield f"    input: {f.label}"
            yield f"    kept in {f.saved}"
            for line in f.detail.strip().splitlines()[-6:]:
                yield f"    | {line[:200]}"
        if len(r.findings) > shown:
            where = Path(r.findings[0].saved).parent
            yield f"  ... {len(r.findings) - shown} more distinct findings kept under {where}"


def fuzz(
    surfaces: list[str],
    count: int,
    seed: int,
    budget: float,
    keep: Path | None,
    isolated: bool | None = None,
) -> list[SurfaceResult]:
    """Run the surfaces, each in its own child; returns their results."""
    if isolated is None:
        isolated = os.geteuid() == 0 and shutil.which("ip") is not None
    base = Path(tempfile.mkdtemp(prefix="fslab-fuzz-", dir="/dev/shm"))
    try:
        results = [run_in_child(name, count, seed, base, budget, isolated) for name in surfaces]
        for r in results:
            for f in r.findings:
                if keep is not None:
                    target = keep / r.surface / Path(f.saved).name
                    shutil.copytree(f.saved, target, dirs_exist_ok=True)
                    f.saved = str(target)
        return results
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--inputs", type=int, default=10000, help="inputs per surface")
    parser.add_argument("--surface", action="append", choices=SURFACES, help="(repeatable)")
    parser.add_argument("--budget", type=float, default=30.0, help="seconds one input may take")
    parser.add_argument(
        "--keep", type=Path, help="where to keep failing inputs (default: a temp dir)"
    )
    args = parser.parse_args()
    keep = args.keep or Path(tempfile.mkdtemp(prefix="fslab-fuzz-findings-"))
    started = time.monotonic()
    results = fuzz(args.surface or list(SURFACES), args.inputs, args.seed, args.budget, keep)
    print(table(results))
    print()
    for line in details(results):
        print(line)
    total = time.monotonic() - started
    print(
        f"\nseed {args.seed}, {args.inputs} inputs per surface, {total / 60:.1f} min; "
        f"failing inputs kept in {keep}"
    )
    bad = sum(
        r.tracebacks + r.violations + len(r.writes) + len(r.canaries) + len(r.processes)
        for r in results
    )
    return 1 if bad or any(r.error for r in results) else 0


def _proposed_command(message: str) -> bool:
    """reproduce writes a report's shell command switched off by design (docs/security.md):
    the spec then refuses to run until the user opts in, which is not a spec that fails."""
    refusal = "a command workload runs the spec's own program"
    return "workload.argv" in message and refusal in message


if __name__ == "__main__":
    sys.exit(main())
