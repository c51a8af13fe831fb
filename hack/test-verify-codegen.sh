#!/usr/bin/env bash
# Proves hack/verify-codegen.sh can fail: in a scratch copy of the tree, add a
# field to an API type without regenerating and expect verify to reject it.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "${TMP}"' EXIT

cd "${ROOT}"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
  [ -e "$f" ] && printf '%s\0' "$f"
done | xargs -0 cp --parents -t "${TMP}"
cd "${TMP}"
git init -q . && git add -A >/dev/null   # verify lists files through git

types=pkg/apis/flink/v1beta1/flinkstatesnapshot_types.go
sed -i 's|^\tFailures int32 `json:"failures,omitempty"`|&\n\tProbeField string `json:"probeField,omitempty"`|' "${types}"
grep -q ProbeField "${types}" || { echo "FAIL: could not edit ${types}" >&2; exit 1; }
git add -A >/dev/null

if hack/verify-codegen.sh >verify.log 2>&1; then
  echo "FAIL: verify-codegen.sh passed although ${types} changed without regenerating" >&2
  exit 1
fi
grep -q "out of date" verify.log || { echo "FAIL: verify failed for another reason:" >&2; cat verify.log >&2; exit 1; }
echo "ok: verify-codegen.sh rejects a type edited without regenerating"
