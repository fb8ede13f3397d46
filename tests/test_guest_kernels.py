"""Kernels: the cache, a user's build, Debian's registry answers, the vng command line.

Nothing boots here. The kernel image read is the real cached Debian kernel;
apt's answers were captured by tests/data/capture_guest_apt.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fslab.base.errors import UsageError
from fslab.guest import probe
from fslab.guest.debian import (
    ARCHIVE_SUITES,
    SECURITY_SUITES,
    Mirrors,
    apt_options,
    parse_indextargets,
    parse_madison,
    sources_list,
)
from fslab.guest.kernels import (
    MANIFEST,
    Kernel,
    bzimage_release,
    in_series,
    limits_problem,
    release_sort_key,
    resolve_kernel,
)
from fslab.guest.runner import check_guests
from fslab.guest.vng import BootPlan, stage_kernel, vng_argv
from fslab.spec.load import validate_spec
from fslab.spec.model import Spec
from tests.guest_support import guest_kernel, require_qemu


def test_releases_sort_naturally_and_series_do_not_bleed() -> None:
    releases = ["6.12.117+deb12-amd64", "6.1.0-57-amd64", "5.10.0-43-amd64", "6.1.0-9-amd64"]
    assert sorted(releases, key=release_sort_key) == [
        "5.10.0-43-amd64",
        "6.1.0-9-amd64",
        "6.1.0-57-amd64",
        "6.12.117+deb12-amd64",
    ]
    assert in_series("6.1.0-57-amd64", "6.1")
    assert not in_series("6.12.117+deb12-amd64", "6.1")


def _fake_cache_entry(root: Path, release: str) -> None:
    """A cache entry as fetch leaves it (image, config, modules.dep, manifest)."""
    real = guest_kernel()
    entry = root / release
    (entry / "boot").mkdir(parents=True)
    (entry / "lib" / "modules" / release).mkdir(parents=True)
    (entry / "boot" / f"vmlinuz-{release}").symlink_to(real.image)
    (entry / "lib" / "modules" / release / "modules.dep").write_text("")
    (entry / MANIFEST).write_text(json.dumps({"release": release, "source": "test"}))


def test_a_series_picks_the_newest_cached_release(tmp_path: Path) -> None:
    for release in ("6.1.0-9-amd64", "6.1.0-57-amd64", "6.12.117+deb12-amd64"):
        _fake_cache_entry(tmp_path, release)
    (tmp_path / "6.1.0-99-amd64").mkdir()  # no manifest: a fetch that never finished
    assert resolve_kernel("6.1", root=tmp_path).release == "6.1.0-57-amd64"
    assert resolve_kernel("6.12", root=tmp_path).release == "6.12.117+deb12-amd64"
    assert resolve_kernel("6.1.0-9-amd64", root=tmp_path).release == "6.1.0-9-amd64"


def test_an_unknown_release_says_how_to_fetch_it(tmp_path: Path) -> None:
    _fake_cache_entry(tmp_path, "6.1.0-57-amd64")
    with pytest.raises(UsageError) as caught:
        resolve_kernel("4.14.0-1-amd64", root=tmp_path)
    assert caught.value.exit_code == 2
    assert "fslab kernels fetch 4.14.0-1-amd64" in str(caught.value)
    assert "cached: 6.1.0-57-amd64" in str(caught.value)


def test_the_release_is_read_from_the_bzimage_header() -> None:
    kernel = guest_kernel()
    assert bzimage_release(kernel.image) == kernel.release


def test_a_file_that_is_not_a_bzimage_is_refused(tmp_path: Path) -> None:
    not_image = tmp_path / "vmlinux"
    not_image.write_bytes(b"\x7fELF" + bytes(4096))
    with pytest.raises(UsageError, match="not an x86 bzImage"):
        resolve_kernel(str(not_image))


def test_a_bzimage_without_modules_is_refused(tmp_path: Path) -> None:
    kernel = guest_kernel()
    image = tmp_path / "bzImage"
    shutil.copy(kernel.image, image)
    with pytest.raises(UsageError, match="missing modules") as caught:
        resolve_kernel(str(image))
    assert caught.value.exit_code == 2


def test_a_modules_dir_without_modules_dep_is_refused(tmp_path: Path) -> None:
    kernel = guest_kernel()
    modules = tmp_path / "mods" / kernel.release
    modules.mkdir(parents=True)
    with pytest.raises(UsageError, match=r"no modules\.dep; run `depmod"):
        resolve_kernel(str(kernel.image), str(modules))


def test_a_users_bzimage_with_modules_elsewhere_is_staged_for_vng(tmp_path: Path) -> None:
    kernel = guest_kernel()
    image = tmp_path / "build" / "bzImage"
    image.parent.mkdir()
    shutil.copy(kernel.image, image)
    assert kernel.modules_dir is not None
    user = resolve_kernel(str(image), str(kernel.modules_dir))
    assert user.release == kernel.release and user.source == f"build {image}"
    staged = stage_kernel(user, tmp_path / "work")
    assert staged != image and staged.resolve() == image
    assert (staged.parent.parent / "lib" / "modules" / user.release).resolve() == (
        kernel.modules_dir.resolve()
    )
    # a cache entry needs no staging: its modules sit under the image's ancestor
    assert stage_kernel(kernel, tmp_path / "work2") == kernel.image


def test_the_kernel_facts_name_the_config_and_its_cpu_limit() -> None:
    kernel = guest_kernel()
    facts = kernel.facts()
    assert len(facts["kernel_config_sha256"]) == 64
    assert facts["kernel_config"]["CONFIG_NR_CPUS"] == str(kernel.max_possible_cpus())
    assert kernel.max_possible_cpus() is not None and kernel.max_possible_cpus() >= 1728


def _plan(kernel: Kernel, **changes: object) -> BootPlan:
    fields = {
        "kernel": kernel,
        "kernel_path": kernel.image,
        "cpus": 2,
        "possible_cpus": None,
        "memory_bytes": 3 * 1024**3,
        "accel": "tcg",
        "rwdir": Path("/tmp/fslab-guest-1/boot-1"),
        "command": ("/venv/bin/python", "-m", "fslab.guest.agent", "/tmp/x y/session.json"),
        "name": "fslab-1-00000000",
    }
    fields.update(changes)
    return BootPlan(**fields)  # type: ignore[arg-type]


def test_vng_argv_for_tcg_and_kvm() -> None:
    kernel = Kernel("6.1.0-57-amd64", Path("/k/boot/vmlinuz"), Path("/k/lib/modules/x"), None, "t")
    tcg = vng_argv(_plan(kernel, possible_cpus=1728), "vng")
    assert tcg[:3] == ["vng", "--run", "/k/boot/vmlinuz"]
    assert "--disable-kvm" in tcg and "--force-9p" in tcg
    assert tcg[tcg.index("--cpus") + 1] == "2"
    assert tcg[tcg.index("--memory") + 1] == "3072M"
    assert tcg[tcg.index("--append") + 1] == "possible_cpus=1728"
    assert tcg[tcg.index("--rwdir") + 1] == "/tmp/fslab-guest-1/boot-1"
    assert tcg[-2:] == [
        "--exec",
        "env 'NPY_DISABLE_CPU_FEATURES=X86_V3 X86_V4 AVX512_ICL AVX512_SPR' "
        "/venv/bin/python -m fslab.guest.agent '/tmp/x y/session.json'",
    ]
    kvm = vng_argv(_plan(kernel, accel="kvm"), "vng")
    assert "--disable-kvm" not in kvm and "--append" not in kvm
    assert kvm[-1] == "/venv/bin/python -m fslab.guest.agent '/tmp/x y/session.json'"


def test_host_mirrors_come_from_apt_indextargets(data_dir: Path) -> None:
    mirrors = parse_indextargets((data_dir / "guest_apt_indextargets.txt").read_text())
    assert mirrors == Mirrors(
        "http://mirror.example/debian", "http://mirror.example/debian-security"
    )
    assert parse_indextargets("https://packages.example/apt|cloud-sdk|Google\n") is None


def test_sources_add_bullseye_beside_bookworm_on_the_same_mirrors(tmp_path: Path) -> None:
    keyring = tmp_path / "keyring.gpg"
    keyring.write_bytes(b"")
    text = sources_list(Mirrors("http://a/debian", "http://a/debian-security"), keyring)
    lines = text.splitlines()
    assert f"deb [signed-by={keyring}] http://a/debian bullseye main" in lines
    assert f"deb [signed-by={keyring}] http://a/debian-security bullseye-security main" in lines
    assert len(lines) == len(ARCHIVE_SUITES) + len(SECURITY_SUITES)


def test_apt_state_is_private(tmp_path: Path) -> None:
    options = apt_options(tmp_path)
    settings = dict(o.split("=", 1) for o in options[1::2])
    for key in (
        "Dir::Etc::SourceList",
        "Dir::Etc::SourceParts",
        "Dir::State::Lists",
        "Dir::State::status",
        "Dir::Cache",
    ):
        assert settings[key].startswith(str(tmp_path)), key


def test_madison_lists_each_release_once_without_cloud_or_rt(data_dir: Path) -> None:
    offered = parse_madison((data_dir / "guest_apt_madison.txt").read_text())
    releases = [k.release for k in offered]
    assert len(releases) == len(set(releases))
    assert {k.series for k in offered} == {"5.10", "6.1", "6.12"}
    assert not [r for r in releases if "cloud" in r or "rt" in r]
    by_release = {k.release: k for k in offered}
    assert by_release["5.10.0-43-amd64"].suite == "bullseye-security"
    assert by_release["5.10.0-43-amd64"].package == "linux-image-5.10.0-43-amd64-unsigned"
    assert releases == sorted(releases, key=release_sort_key)


def test_cpu_limits_come_from_qemu_and_the_kernel_config() -> None:
    require_qemu()
    kernel = guest_kernel()
    limit = probe.max_vcpus("tcg")
    assert limit >= 2
    probe.check_cpus(2, 1728, "tcg", kernel)
    with pytest.raises(UsageError, match=f"allows at most {limit} vCPUs") as caught:
        probe.check_cpus(limit + 1, None, "tcg", kernel)
    assert caught.value.exit_code == 2
    nr_cpus = kernel.max_possible_cpus()
    assert nr_cpus is not None
    with pytest.raises(UsageError, match=f"CONFIG_NR_CPUS={nr_cpus}"):
        probe.check_cpus(2, nr_cpus + 1, "tcg", kernel)


def test_kvm_device_problem_names_the_device(tmp_path: Path) -> None:
    problem = probe.kvm_device_problem(tmp_path / "kvm")
    assert problem is not None and "does not exist" in problem


def test_asking_for_kvm_without_a_device_is_a_usage_error(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(probe, "KVM_DEVICE", tmp_path / "kvm")
    kernel = Kernel("6.1.0-57-amd64", Path("/k"), Path("/m"), None, "t")
    with pytest.raises(UsageError, match=r"accel = kvm: .* does not exist"):
        probe.choose_accel("kvm", kernel, lambda _k: None)


def _limited_guest_spec(kernel: str, modules: str | None, limits: bool) -> Spec:
    return validate_spec(
        {
            "name": "guest-limits",
            "target": {"size": "512MiB", **({"limits": {"write_iops": 200}} if limits else {})},
            "filesystems": [{"label": "ext4", "type": "ext4"}],
            "workload": {"kind": "fio", "options": {"name": "w", "rw": "randwrite"}},
            "vm": {"kernel": kernel, "modules": modules, "accel": "tcg"},
        }
    )


def test_limits_in_a_guest_need_its_kernel_built_with_the_blkio_throttle(tmp_path: Path) -> None:
    """Debian's kernels have it; a user's build without it is refused before any boot."""
    require_qemu()
    kernel = guest_kernel()
    assert limits_problem(kernel) is None
    assert kernel.facts()["kernel_config"]["CONFIG_BLK_DEV_THROTTLING"] == "y"
    assert kernel.config_path is not None and kernel.modules_dir is not None
    image = tmp_path / "bzImage"
    shutil.copy(kernel.image, image)
    (tmp_path / f"config-{kernel.release}").write_text(
        kernel.config_path.read_text().replace(
            "CONFIG_BLK_DEV_THROTTLING=y", "# CONFIG_BLK_DEV_THROTTLING is not set"
        )
    )
    modules = str(kernel.modules_dir)
    check_guests(_limited_guest_spec(str(image), modules, limits=False))
    with pytest.raises(UsageError) as caught:
        check_guests(_limited_guest_spec(str(image), modules, limits=True))
    assert caught.value.exit_code == 2
    assert str(caught.value).startswith("target.limits: kernel ")
    assert "without CONFIG_BLK_DEV_THROTTLING" in str(caught.value)
