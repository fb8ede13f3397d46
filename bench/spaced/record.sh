#!/bin/bash
# Record campaigns of one small spec spaced apart in wall-clock time, for
# bench/stats_calibration.py: A/A across campaigns (base.toml against itself)
# and power (base.toml against cost.toml, the same spec with a 2 KiB block
# size, which a pilot measured at about -15% write IOPS).
#
#   bench/spaced/record.sh DB CYCLES SPACING_S [FSLAB]
#
# Each cycle runs every spec named in DB.specs (spec files here, e.g.
# "base cost cost base"; read again each cycle, so the mix can change during
# a recording), each as its own campaign, in alternating order,
# all under one hold of the exclusive machine lock (about two minutes; one
# wait in the lock's queue per cycle), then sleeps SPACING_S +-30% with the
# lock free. Campaigns of one spec are therefore at least one spacing plus
# the queue's wait apart. FSLAB defaults to the worktree's .venv/bin/fslab;
# pass a frozen install so edits to the tree during a recording of hours do
# not change the tool mid-way. Every campaign's start, end and id go to
# DB.log (beside the database).
set -u
db=${1:?results database}
cycles=${2:?number of cycles}
spacing=${3:?seconds between cycles}
here=$(cd "$(dirname "$0")" && pwd)
fslab=${4:-$here/../../.venv/bin/fslab}
lock=${FSLAB_MACHINE_LOCK:-/work/machine.lock}
log="$db.log"

# one cycle, run under the lock: each spec given, one campaign each
cycle_body() {
    for spec in "$@"; do
        start=$(date -u +%FT%TZ)
        "$fslab" run "$here/$spec.toml" --no-collect --db "$db" >"$db.last.out" 2>&1
        rc=$?
        id=$(grep -o 'campaign [0-9]* ->' "$db.last.out" | head -n 1 | cut -d' ' -f2)
        echo "$start $(date -u +%FT%TZ) $spec campaign=${id:-?} rc=$rc" >>"$log"
    done
}

for ((cycle = 0; cycle < cycles; cycle++)); do
    read -r -a specs <"$db.specs"
    if ((cycle % 2 == 1)); then
        reversed=()
        for ((i = ${#specs[@]} - 1; i >= 0; i--)); do reversed+=("${specs[i]}"); done
        specs=("${reversed[@]}")
    fi
    export -f cycle_body
    export db here fslab log
    flock -x "$lock" bash -c 'cycle_body "$@"' cycle "${specs[@]}"
    # +-30% jitter so the schedule does not beat with anything periodic
    low=$((spacing * 7 / 10))
    sleep $((low + RANDOM % (spacing * 6 / 10 + 1)))
done
echo "$(date -u +%FT%TZ) done: $cycles cycles" >>"$log"
