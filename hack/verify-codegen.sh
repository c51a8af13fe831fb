#!/usr/bin/env bash
# Fails when generated code or CRDs are out of date with the API types: it
# copies the working tree to a temp dir, regenerates there, and diffs every
# generated path. The working tree itself is never touched.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "${TMP}"' EXIT

GENERATED=(pkg/generated pkg/apis manifests/crds)

cd "${ROOT}"
# Tracked and untracked-but-not-ignored files: what a commit would contain.
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
  [ -e "$f" ] && printf '%s\0' "$f"
done | xargs -0 cp --parents -t "${TMP}"

(cd "${TMP}" && hack/update-codegen.sh >/dev/null)

status=0
for p in "${GENERATED[@]}"; do
  if ! diff -ruN "${ROOT}/${p}" "${TMP}/${p}" >"${TMP}/diff.txt"; then
    echo "generated files under ${p} are out of date; run hack/update-codegen.sh" >&2
    head -40 "${TMP}/diff.txt" >&2
    status=1
  fi
done
[ "${status}" -eq 0 ] && echo "generated code and CRDs are up to date"
exit "${status}"
