#!/usr/bin/env bash
# Builds what the e2e tests need to run real Flink as local JVMs, for one pinned
# Flink version (see versions.txt) or all of them:
#
#   <cache>/flink/<version>/classpath.txt  the runtime classpath flink-dist would give
#                                           (jars in ~/.m2, resolved from Maven Central)
#   <cache>/flink/<version>/testjob.jar    org.flinkops.testjob.CountingJob, compiled
#                                           against that version
#   <cache>/flink/<version>/examples/streaming/*.jar
#                                           the image's /opt/flink/examples/streaming:
#                                           Flink's own example jars (examples/pom.xml)
#
# where <cache> is ${FLINKOP_CACHE_DIR:-$HOME/.cache/flink-operator}. Prints the
# version directory (one line per version) on stdout; Maven's output goes to stderr.
#
# Idempotent and fast when cached: the build is redone only when the stamp (a hash
# of this script, versions.txt, testjob/ and examples/pom.xml) changed or a jar of
# the classpath is gone from ~/.m2. Concurrent runs serialize on a lock file per version.
#
# Usage: e2e/flink/build.sh <version|all>
set -o errexit -o nounset -o pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache_root="${FLINKOP_CACHE_DIR:-$HOME/.cache/flink-operator}/flink"

usage() {
	echo "usage: $0 <version|all>; versions: $(pinned | awk '{print $1}' | tr '\n' ' ')" >&2
	exit 2
}

# Prints "<version> <profile>" for each pinned version.
pinned() { grep -v '^\s*#' "$here/versions.txt" | grep -v '^\s*$'; }

# A hash over every input of the build.
stamp() {
	(
		cd "$here"
		find build.sh versions.txt testjob/pom.xml testjob/src examples/pom.xml -type f | LC_ALL=C sort | while read -r f; do
			printf '%s\n' "$f"
			cat "$f"
		done
	) | sha256sum | cut -d' ' -f1
}

# Succeeds when dir holds a complete build for the current stamp.
up_to_date() {
	local dir=$1 want=$2 jar
	[[ -f "$dir/stamp" && -f "$dir/classpath.txt" && -f "$dir/testjob.jar" ]] || return 1
	[[ -f "$dir/examples/streaming/StateMachineExample.jar" ]] || return 1
	[[ "$(cat "$dir/stamp")" == "$want" ]] || return 1
	local IFS=:
	for jar in $(cat "$dir/classpath.txt"); do
		[[ -f "$jar" ]] || return 1
	done
}

build_one() {
	local version=$1 profile=$2 dir="$cache_root/$1" want
	want="$(stamp)"
	mkdir -p "$dir"
	exec 9>"$dir.lock"
	flock 9
	if ! up_to_date "$dir" "$want"; then
		echo "flink $version: building classpath, test job and example jars with Maven (profile $profile)" >&2
		local t0=$SECONDS
		rm -f "$dir/stamp"
		mvn -B -q -Dstyle.color=never -f "$here/testjob/pom.xml" -P "$profile" \
			-Dflinkop.build.dir="$dir/build" \
			-Dmdep.outputFile="$dir/classpath.txt.tmp" \
			package dependency:build-classpath 1>&2
		if ! tr ':' '\n' <"$dir/classpath.txt.tmp" | grep -q "/flink-runtime-$version\.jar\$"; then
			echo "versions.txt pins $version but profile $profile of testjob/pom.xml resolves another flink-runtime" >&2
			exit 1
		fi
		cp "$dir/build/testjob.jar" "$dir/testjob.jar.tmp"
		mv "$dir/testjob.jar.tmp" "$dir/testjob.jar"

		# The example jars are copies (not links into ~/.m2), so only the stamp and
		# their presence decide whether they are up to date.
		rm -rf "$dir/examples-build/streaming" "$dir/examples.tmp"
		mvn -B -q -Dstyle.color=never -f "$here/examples/pom.xml" -P "$profile" \
			-Dflinkop.build.dir="$dir/examples-build" package 1>&2
		mkdir -p "$dir/examples.tmp"
		cp -R "$dir/examples-build/streaming" "$dir/examples.tmp/streaming"
		rm -rf "$dir/examples" "$dir/examples-build"
		mv "$dir/examples.tmp" "$dir/examples"
		mv "$dir/classpath.txt.tmp" "$dir/classpath.txt"
		echo "$want" >"$dir/stamp"
		echo "flink $version: built in $((SECONDS - t0))s" >&2
	fi
	flock -u 9
	exec 9>&-
	echo "$dir"
}

[[ $# -eq 1 ]] || usage
found=0
while read -r version profile; do
	if [[ "$1" == all || "$1" == "$version" ]]; then
		build_one "$version" "$profile"
		found=1
	fi
done < <(pinned)
[[ $found == 1 ]] || usage
