#!/usr/bin/env bash
# Runs the unit tests from a copy of the tracked files in a directory with no
# sibling folders, so a test that reads anything outside the repository fails
# here as it would on a user's fresh clone. The copy's path is fixed (under
# the project cache) so Go's build cache, which keys on package directories,
# is reused from run to run; the copy itself is made anew each time.
# Usage: hack/hermetic-unit.sh [go test args...] (default: the unit packages)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
parent="${FLINKOP_CACHE_DIR:-${HOME}/.cache/flink-operator}/hermetic"
copy="${parent}/flink-operator"
rm -rf "${parent}"
mkdir -p "${copy}"
# Tracked files as they are in the work tree (edits included, deletions honoured).
(
  cd "${root}"
  git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [[ -e "${f}" ]] && printf '%s\0' "${f}"; done |
    tar --null -T - -cf -
) | tar -C "${copy}" -xf -
if [[ -n "$(ls -A "${parent}" | grep -vx flink-operator)" ]]; then
  echo "hermetic-unit: ${parent} is not empty beside the copy" >&2
  exit 1
fi
echo "hermetic-unit: running from ${copy} (nothing beside it)" >&2
cd "${copy}"
if [[ $# -eq 0 ]]; then
  set -- -count=1 ./cmd/... ./pkg/... ./hack/...
fi
go test "$@"
