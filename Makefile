# fslab: the two commands of the quick start are `make demo` and `make test`;
# `make check` runs everything (guests and the slow tests too) and is what CI runs.
# Both install what is missing (Debian packages, a venv with fslab) and are idempotent.

VENV ?= .venv
# the benchmarks' packages (fio, coreutils: tests/test_workloads.py checks them against
# fslab.workload.registry), the filesystems' tools, perf, losetup and mdadm (target.array)
DEB_PACKAGES = fio coreutils fsmark sysbench dbench xfsprogs e2fsprogs btrfs-progs linux-perf util-linux mdadm
# installed without their recommends: mdadm's would bring a mail server
BARE_DEB_PACKAGES = mdadm
# guests under virtme-ng (fslab run --kernel, ...): qemu-system-x86, busybox-static and kmod
# (depmod); file for virtme-ng's kernel-version detection. `make guest-deps` installs them.
GUEST_DEB_PACKAGES = qemu-system-x86 busybox-static kmod file
# the tests need chromium (the HTML report rendered in a real browser) and postgresql
# (the store tests start their own cluster with initdb and pg_ctl); `make check` also
# the guest packages
TEST_DEB_PACKAGES = chromium postgresql
FSLAB = $(VENV)/bin/fslab
# The kernel the guest tests boot: the newest Debian 6.1, into fslab's cache; and the
# fsync-storm reporter's 5.10, which the reproduced spec names (tests/test_reproduce.py)
GUEST_KERNEL ?= 6.1
REPORTER_KERNEL ?= 5.10

.PHONY: demo test check deps guest-deps test-deps check-deps install-debs venv lint clean-leftovers guest-kernel

deps:
	@$(MAKE) --no-print-directory install-debs PACKAGES="$(DEB_PACKAGES)"

guest-deps:
	@$(MAKE) --no-print-directory install-debs PACKAGES="$(DEB_PACKAGES) $(GUEST_DEB_PACKAGES)"

test-deps:
	@$(MAKE) --no-print-directory install-debs PACKAGES="$(DEB_PACKAGES) $(TEST_DEB_PACKAGES)"

check-deps:
	@$(MAKE) --no-print-directory install-debs \
		PACKAGES="$(DEB_PACKAGES) $(TEST_DEB_PACKAGES) $(GUEST_DEB_PACKAGES)"

install-debs:
	@missing=""; bare=""; for p in $(PACKAGES); do \
		dpkg -s $$p >/dev/null 2>&1 && continue; \
		case " $(BARE_DEB_PACKAGES) " in *" $$p "*) bare="$$bare $$p";; \
			*) missing="$$missing $$p";; esac; done; \
	if [ -n "$$missing$$bare" ]; then \
		echo "installing Debian packages:$$missing$$bare"; \
		apt-get update -qq && \
		{ [ -z "$$missing" ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; } && \
		{ [ -z "$$bare" ] || DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends $$bare; }; \
	fi

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -e '.[dev]'
	touch $@

venv: $(VENV)/.installed

guest-kernel: venv
	@$(FSLAB) kernels check $(GUEST_KERNEL) >/dev/null 2>&1 || $(FSLAB) kernels fetch $(GUEST_KERNEL)
	@$(FSLAB) kernels check $(REPORTER_KERNEL) >/dev/null 2>&1 || $(FSLAB) kernels fetch $(REPORTER_KERNEL)

demo: deps venv
	$(FSLAB) doctor || true
	$(FSLAB) run ext4-fsync-storm --quick
	$(FSLAB) report --format html -o fslab-demo-report.html
	$(FSLAB) compare $$($(FSLAB) show --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["campaign"]["id"])') --by filesystem
	$(FSLAB) diagnose

lint: venv
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/mypy

# The inner loop: lint, unit tests, parsers on captured data, the diagnosis corpus and a
# few root integration tests on RAM loop devices. No guests, none of the tests that
# tests/conftest.py lists as slow.
test: test-deps venv lint
	$(VENV)/bin/pytest -q -ra -m 'not guest and not slow'

# Everything: `make test`, then the guest tests (real qemu boots; TCG where KVM is
# missing) and the slow ones. CI runs this.
check: check-deps venv guest-kernel
	@$(MAKE) --no-print-directory test
	$(VENV)/bin/pytest -q -ra -m 'guest or slow'

clean-leftovers: venv
	$(FSLAB) doctor --cleanup
