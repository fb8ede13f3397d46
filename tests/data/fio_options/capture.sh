#!/usr/bin/env bash
# Captures fio's own list of options, their aliases, its engines' options and its
# command-line-only options. tests/test_fio_trust.py checks that fslab's trust table
# (fslab.workload.fio.trust) classifies every option named here.
# Run from this folder: ./capture.sh
set -euo pipefail
cd "$(dirname "$0")"
fio --version > version.txt
fio --cmdhelp=all > cmdhelp_all.txt 2>&1
# each option's aliases, from its own --cmdhelp page
: > aliases.txt
for opt in $(sed -n 's/^ *\([A-Za-z0-9_-]*\) *:.*/\1/p' cmdhelp_all.txt); do
  alias=$(fio --cmdhelp="$opt" 2>/dev/null | sed -n 's/^ *alias: *//p' | head -1)
  [ -n "$alias" ] && echo "$opt $alias" >> aliases.txt
done
fio --enghelp > engines.txt 2>&1 || true
: > engine_options.txt
for engine in $(sed -n 's/^\t//p' engines.txt); do
  echo "[$engine]" >> engine_options.txt
  fio --enghelp="$engine" >> engine_options.txt 2>&1 || true
done
fio --help > help.txt 2>&1 || true
