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
#
# Go 1.26's fuzzing coordinator can fail a target with a bare "context
# deadline exceeded" as -fuzztime ends on a loaded machine, having found
# nothing (go.dev/issue/75804, fixed in Go 1.27). Such a run, with no
# failing input written and no panic, is run again, up to twice more, with
# one fuzzing worker (less load as -fuzztime ends); any other failure, or
# that one three times, stops the script.
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

out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "fuzz: ${#targets[@]} targets, $FUZZTIME each"
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	echo "fuzz: $name ($pkg)"
	workers=("${parallel[@]}")
	for attempt in 1 2 3; do
		status=0
		"$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "${workers[@]}" "$pkg" 2>&1 | tee "$out" || status=$?
		[[ $status -ne 0 ]] || break
		if [[ $attempt -lt 3 ]] && grep -q 'context deadline exceeded' "$out" &&
			! grep -qE 'Failing input written|panic:' "$out"; then
			echo "fuzz: $name ended with the fuzzing engine's deadline error and no finding (go.dev/issue/75804); running it again with one worker"
			workers=(-parallel 1)
			continue
		fi
		exit "$status"
	done
done
echo "fuzz: ${#targets[@]} targets ran $FUZZTIME each without a finding"
