#!/bin/bash
# Record campaigns of one small spec spaced apart in wall-clock time, for
# bench/stats_calibration.py: A/A across campaigns (base.toml against itself)
# and power (base.toml against cost.toml, the same spec with one mount option
# that costs about 10%, measured by a pilot: see README.md here).
#
#   bench/spaced/record.sh DB CYCLES SPACING_S [FSLAB]
#
# Each cycle runs every spec named in DB.specs (one word per spec file here,
# e.g. "base cost"; read again each cycle, so cost can join a recording that
# started with base alone) once, in alternating order, each as its own
# campaign under the exclusive machine lock, then sleeps SPACING_S +-30%
# (the machine is idle meanwhile: the lock is free for others). Campaigns are
# therefore 1 to many spacings apart. FSLAB defaults to the worktree's
# .venv/bin/fslab; pass a frozen install so edits to the tree during a
# recording of several hours do not change the tool mid-way.
# Every campaign's start, end and id go to DB.log (beside the database).
set -u
db=${1:?results database}
cycles=${2:?number of cycles}
spacing=${3:?seconds between cycles}
here=$(cd "$(dirname "$0")" && pwd)
fslab=${4:-$here/../../.venv/bin/fslab}
lock=${FSLAB_MACHINE_LOCK:-/work/machine.lock}
log="$db.log"

run_one() {
    local spec=$1
    local start end rc
    start=$(date -u +%FT%TZ)
    flock -x "$lock" "$fslab" run "$here/$spec.toml" --no-collect --db "$db" \
        >"$db.last.out" 2>&1
    rc=$?
    end=$(date -u +%FT%TZ)
    echo "$start $end $spec rc=$rc $(tail -n 3 "$db.last.out" | tr '\n' ' ' | cut -c1-120)" >>"$log"
}

for ((cycle = 0; cycle < cycles; cycle++)); do
    read -r -a specs <"$db.specs"
    if ((cycle % 2 == 1)); then
        reversed=()
        for ((i = ${#specs[@]} - 1; i >= 0; i--)); do reversed+=("${specs[i]}"); done
        specs=("${reversed[@]}")
    fi
    for spec in "${specs[@]}"; do run_one "$spec"; done
    # +-30% jitter so the schedule does not beat with anything periodic
    low=$((spacing * 7 / 10))
    sleep $((low + RANDOM % (spacing * 6 / 10 + 1)))
done
echo "$(date -u +%FT%TZ) done: $cycles cycles" >>"$log"
