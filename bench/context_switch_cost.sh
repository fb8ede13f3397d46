#!/bin/bash
# What does each instrument add to a context switch? `perf bench sched pipe` pinned
# to one CPU (a round trip is two switches), in rounds alternating: nothing, `perf
# record` as the perf collector runs it, `perf stat` counting the tpcounters
# collector's ext4/jbd2/writeback tracepoints, and the workqueue collector's four
# events in a private ftrace instance. Prints each condition's us/op per round and
# their median. Root, under the machine lock:
#   flock -x /work/machine.lock bench/context_switch_cost.sh [ROUNDS]
set -u
rounds=${1:-6}
T=/sys/kernel/tracing/instances/fslab-ctx-cost
WQ="workqueue_queue_work workqueue_activate_work workqueue_execute_start workqueue_execute_end"
bench() { taskset -c 0 perf bench sched pipe -l 300000 2>/dev/null | awk '/usecs\/op/{print $1}'; }
cond() {
    case $1 in
    none) bench ;;
    record)
        perf record -a -g --kernel-callchains -e cpu-clock -F 99 --no-buildid \
            --no-buildid-cache -o /tmp/fslab-ctx.data -- sleep 30 >/dev/null 2>&1 &
        p=$!; sleep 1.5; bench; kill -INT $p; wait $p 2>/dev/null ;;
    stat)
        perf stat -a -x , -e writeback:balance_dirty_pages -e ext4:ext4_da_write_begin \
            -e ext4:ext4_writepages -e jbd2:jbd2_checkpoint -o /tmp/fslab-ctx.stat -- sleep 30 &
        p=$!; sleep 1; bench; kill -INT $p; wait $p 2>/dev/null ;;
    wq)
        mkdir -p $T
        for e in $WQ; do echo 1 >$T/events/workqueue/$e/enable; done
        sleep 0.5; bench
        echo 0 >$T/tracing_on
        for e in $WQ; do echo 0 >$T/events/workqueue/$e/enable; done
        rmdir $T ;;
    esac
}
trap 'rmdir $T 2>/dev/null; rm -f /tmp/fslab-ctx.data /tmp/fslab-ctx.stat' EXIT
for ((r = 1; r <= rounds; r++)); do
    for c in none record stat wq; do echo "$c $(cond $c)"; done
done | awk '{v[$1] = v[$1] " " $2; n[$1]++; x[$1, n[$1]] = $2}
    END {
        for (c in v) {
            m = n[c]; for (i = 1; i <= m; i++) s[i] = x[c, i]
            for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (s[j] < s[i]) { t = s[i]; s[i] = s[j]; s[j] = t }
            med = (m % 2) ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
            printf "%-7s median %.2f us/op:%s\n", c, med, v[c]
        }
    }'
