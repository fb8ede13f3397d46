#!/bin/sh
# The full ext4-fsync-storm preset as a grid (every configuration at every numjobs,
# 6 s runs after a 2 s ramp), on a quiet machine: its answer and ext4-default's
# curve (every clean run's IOPS per numjobs) as bench/time_to_answer.py saves them.
# grid-1.json: this machine (2 CPUs), 2026-12-03 20:25-20:59 UTC, 188 runs, 33.6 min.
set -e
cd "$(dirname "$0")/../../.."
.venv/bin/python bench/time_to_answer.py --order grid --set run.runtime=6s \
    --set run.ramp=2s --save tests/data/adaptive
