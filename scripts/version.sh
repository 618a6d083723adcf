#!/usr/bin/env bash
# Prints the build's version, from the newest release tag vMAJOR.MINOR.PATCH
# reachable from HEAD (git describe --tags; tags of another form, such as
# v1.2.0-rc1 or v2, are not release tags and are skipped):
#
#   0.17.3                          HEAD is tagged v0.17.3 and the tree is clean: a release
#   0.17.3-dev.5+g0123456789ab      5 commits after v0.17.3 (commit 0123456789ab)
#   0.17.3-dev.0+g0123456789ab.dirty  uncommitted or untracked changes (at the tag or after it)
#   0.0.0-dev+g0123456789ab         no release tag reachable: a shallow clone, a fork without tags
#   0.0.0-dev                       not a git checkout
#
# The agent's binary (-X tradebridge/agent.Version), `agent version`, its
# VERSIONINFO resource and the MSI's file name carry this string; the MSI's
# numeric ProductVersion is its MAJOR.MINOR.PATCH part (installer/README.md,
# "Versions"). Only a release version has no suffix; make release refuses
# any other.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "0.0.0-dev"
  exit 0
fi
commit=$(git rev-parse --short=12 HEAD 2>/dev/null) || { echo "0.0.0-dev"; exit 0; }
dirty=""
[ -z "$(git status --porcelain 2>/dev/null | head -n 1)" ] || dirty=".dirty"

# --long: always TAG-COUNT-gHASH, also at the tag itself.
if desc=$(git describe --tags --long --abbrev=12 --match 'v[0-9]*.[0-9]*.[0-9]*' --exclude '*-*' HEAD 2>/dev/null) &&
   [[ "$desc" =~ ^v([0-9]+\.[0-9]+\.[0-9]+)-([0-9]+)-g[0-9a-f]+$ ]]; then
  base=${BASH_REMATCH[1]}
  count=${BASH_REMATCH[2]}
  if [ "$count" = 0 ] && [ -z "$dirty" ]; then
    echo "$base"
  else
    echo "$base-dev.$count+g$commit$dirty"
  fi
else
  echo "0.0.0-dev+g$commit$dirty"
fi
