#!/bin/bash
# Six campaigns of one name, the last three with data=journal: a level shift for
# fslab series (README, tests/test_noise.py). Run from the repository root as root,
# under the machine lock; it exports the campaigns here (bench/spaced/export.py).
#   tests/data/series/record.sh DB
set -e
FSLAB=${FSLAB:-.venv/bin/fslab}
SPEC=bench/spaced/base.toml
DB=${1:?results database}
rm -f "$DB"*
for i in 1 2 3; do $FSLAB run $SPEC --no-collect --db $DB --set sweep.numjobs=[8] --set run.repeat=4 >/dev/null 2>&1; done
for i in 1 2 3; do $FSLAB run $SPEC --no-collect --db $DB --set sweep.numjobs=[8] --set run.repeat=4 --set 'filesystems.0.mount_options=["noatime","data=journal"]' >/dev/null 2>&1; done
echo '$ fslab series spaced-base'
$FSLAB series spaced-base --db $DB
.venv/bin/python bench/spaced/export.py "$DB" --out tests/data/series --source tests/data/series/record.sh
