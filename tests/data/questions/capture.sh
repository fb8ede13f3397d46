#!/usr/bin/env bash
# A reproduced report whose configurations do not fall off: the fast-commit fs_mark
# report, its planned runs only, so the question "does the report's change move the
# figure?" is left open for tests/test_questions.py to answer with replayed rounds.
#
#   tests/data/questions/capture.sh      # writes fast-commit-fsmark-plan.json
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/../capture_reproduced.sh" tests/data/reports/ext4-fast-commit-fsmark-8-threads.txt \
    "$here/fast-commit-fsmark-plan.json"
