"""The HTML report in a real browser: headless Chromium renders it, offline, without errors.

`make test` installs Debian's `chromium`; the test skips only where that was
impossible, and fails in CI (FSLAB_CI=1) rather than skip.
Chromium runs with a fresh profile, networking features off, every host name
unresolvable and a net log: any URL the page asks for appears there (Chromium's
own calls home to Google's update and account services are set aside). The
test fails on such a request or a console message, and checks the screenshot
is a real picture (not blank).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
from matplotlib import image
from tests.conftest import require_tool

from fslab.report.html import render_html
from fslab.report.model import build_report
from fslab.store.db import Store
from fslab.store.exchange import import_campaign

DATA = Path(__file__).parent.parent / "data"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--hide-scrollbars",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--enable-logging=stderr",
    "--v=0",
)
CHROMIUM_OWN = ("google.com", "googleapis.com", "gstatic.com", "gvt1.com")


def chromium_screenshot(
    html: Path, png: Path, profile: Path, net_log: Path, size: str = "1280,1800"
) -> str:
    """Render `html` into `png`; returns Chromium's log (stderr)."""
    assert CHROMIUM is not None
    proc = subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--log-net-log={net_log}",
            f"--window-size={size}",
            f"--screenshot={png}",
            html.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stderr


def test_html_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    require_tool(CHROMIUM, "chromium")
    store = Store(tmp_path / "results.db")
    data = json.loads((DATA / "report_campaign_fsync_quick.json").read_text())
    report = build_report(store, import_campaign(store, data))
    html = tmp_path / "report.html"
    html.write_text(render_html(report))
    png = tmp_path / "report.png"
    net_log = tmp_path / "net.json"
    log = chromium_screenshot(html, png, tmp_path / "profile", net_log)
    assert not [line for line in log.splitlines() if ":CONSOLE" in line]
    urls = set(re.findall(r'"url":"([^"]+)"', net_log.read_text()))
    fetched = {u for u in urls if not (urlsplit(u).hostname or "").endswith(CHROMIUM_OWN)}
    assert not fetched, fetched
    pixels = image.imread(png)
    assert pixels.shape[:2] == (1800, 1280)
    assert float(np.std(pixels[..., :3])) > 0.05  # text and plots, not a blank page
