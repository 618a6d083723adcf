#!/usr/bin/env bash
# Runs every Go fuzz target of the module (each func FuzzX in a _test.go
# file), one after another, for FUZZTIME each (default 10m), and stops at
# the first finding. The targets are found with `go test -list`, so a new
# target runs without being listed anywhere.
#
#   FUZZTIME=30s scripts/fuzz.sh       # or: make fuzz FUZZTIME=30s
#   FUZZ_PARALLEL=1 scripts/fuzz.sh    # fuzzing workers (default: GOMAXPROCS)
#   scripts/fuzz.sh ./relay/...        # only these packages
#
# A finding is written by go test to the package's testdata/fuzz/FuzzX/
# directory: fix the code, and commit the file as a seed so that
# `go test` replays it from then on.
set -euo pipefail
cd "$(dirname "$0")/.."

GO="${GO:-go}"
FUZZTIME="${FUZZTIME:-10m}"
parallel=()
if [[ -n "${FUZZ_PARALLEL:-}" ]]; then
	parallel=(-parallel "$FUZZ_PARALLEL")
fi
pkgs=("$@")
if [[ ${#pkgs[@]} -eq 0 ]]; then
	pkgs=(./...)
fi

# go test -list prints a package's matching names, then its "ok" line.
list=$("$GO" test -vet=off -list '^Fuzz' "${pkgs[@]}")
targets=()
names=()
while IFS= read -r line; do
	case "$line" in
	Fuzz*) names+=("$line") ;;
	ok*)
		pkg=$(awk '{print $2}' <<<"$line")
		dups=$(printf '%s\n' "${names[@]}" | sort | uniq -d)
		if [[ -n "$dups" ]]; then
			echo "fuzz: $pkg declares $dups twice (in package and external tests); go test -fuzz needs unique names" >&2
			exit 1
		fi
		for n in "${names[@]}"; do
			targets+=("$pkg $n")
		done
		names=()
		;;
	esac
done <<<"$list"

if [[ ${#targets[@]} -eq 0 ]]; then
	echo "fuzz: no fuzz targets in ${pkgs[*]}" >&2
	exit 1
fi

echo "fuzz: ${#targets[@]} targets, $FUZZTIME each"
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	echo "fuzz: $name ($pkg)"
	"$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "${parallel[@]}" "$pkg"
done
echo "fuzz: ${#targets[@]} targets ran $FUZZTIME each without a finding"
