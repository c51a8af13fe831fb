#!/usr/bin/env bash
# Fails when a tracked file refers to the project's shared/ folder that sits
# beside some checkouts (never beside a user's clone): everything code and
# tests read must live in the repository (pkg/upstreamtest/testdata holds the
# upstream files). hack/hermetic-unit.sh proves the same by running the unit
# tests from a copy of the checkout with nothing beside it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Paths written out, and paths built from parts ("..", "shared").
pattern='\.\./shared|shared/(upstream|flink-rest|spec|reference|hooks)|\.\./\.\./reference/|"\.\.", *"shared"|"shared", *"(upstream|flink-rest|spec|reference)"'
if hits="$(git grep -nE "${pattern}" -- . ':!hack/verify-hermetic.sh')"; then
  echo "verify-hermetic: these lines refer to files outside the repository:" >&2
  echo "${hits}" >&2
  echo "copy what is needed into testdata/ (with its source and license) instead" >&2
  exit 1
fi
echo "verify-hermetic: ok" >&2
