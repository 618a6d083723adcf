#!/usr/bin/env bash
# Prints the build's version, MAJOR.MINOR.PATCH: MAJOR.MINOR from the VERSION
# file, PATCH the number of commits on the checked-out branch, so every
# commit of main builds a higher version (the MSI upgrades in place only to
# a higher one). The agent's binary, its MSI and `agent version` all carry
# this one string.
set -euo pipefail
cd "$(dirname "$0")/.."
base=$(tr -d ' \n\r' < VERSION)
patch=$(git rev-list --count HEAD 2>/dev/null || echo 0)
echo "${base}.${patch}"
