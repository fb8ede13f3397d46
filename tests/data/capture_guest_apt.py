"""Capture apt's real answers for the Debian-registry parser tests.

Run from the repo:  .venv/bin/python tests/data/capture_guest_apt.py

It asks the host's apt for its index targets in the format fslab uses, and
fslab's private apt state (refreshed if a day old) for `apt-cache madison` of
every kernel image package, with the very commands fslab runs, and writes the
outputs to tests/data/guest_apt_*.txt. The mirrors' host names are replaced
by mirror.example (this project names no registry hosts); nothing else is
changed.
"""

from __future__ import annotations

import re
from pathlib import Path

from fslab.base.proc import run
from fslab.guest.debian import PACKAGE_RE, DebianRegistry, apt_options

DATA_DIR = Path(__file__).resolve().parent
HOST_RE = re.compile(r"(https?://)[^/\s]+")


def redact(text: str) -> str:
    return HOST_RE.sub(r"\1mirror.example", text)


def main() -> None:
    targets = run(["apt-get", "indextargets", "--format", "$(REPO_URI)|$(RELEASE)|$(ORIGIN)"])
    (DATA_DIR / "guest_apt_indextargets.txt").write_text(redact(targets.stdout))
    registry = DebianRegistry()
    registry.update()
    names = run(["apt-cache", *apt_options(registry.root), "pkgnames", "linux-image-"]).stdout
    packages = sorted(n for n in names.split() if PACKAGE_RE.match(n))
    # a flavour the parser must leave out, and the candidate-first order madison prints
    packages += ["linux-image-6.1.0-57-cloud-amd64-unsigned", "linux-image-6.1.0-57-rt-amd64"]
    madison = run(["apt-cache", *apt_options(registry.root), "madison", *packages])
    (DATA_DIR / "guest_apt_madison.txt").write_text(redact(madison.stdout))


if __name__ == "__main__":
    main()
