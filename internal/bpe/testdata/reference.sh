#!/usr/bin/env bash
# Reruns the independent Python trainer (reference_bpe.py, Debian's
# python3 with python3-regex) and checks that it writes the committed
# goldens again, comment lines aside (they name the Python version). If
# python3-regex cannot be installed it says so LOUDLY and exits 0 without
# the check; a difference fails the script.
#
#   bash internal/bpe/testdata/reference.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3

loud() {
  echo
  echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
  echo "!!! WARNING: $*"
  echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
  echo
}

if ! "$py" -c 'import regex' 2>/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  (apt-get install -y -qq python3 python3-regex >/dev/null 2>&1 ||
    (apt-get update -qq && apt-get install -y -qq python3 python3-regex >/dev/null)) || true
fi
if ! "$py" -c 'import regex' 2>/dev/null; then
  loud "python3-regex could not be installed (Debian registry unreachable?): internal/bpe's goldens were NOT regenerated and compared"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$py" "$here/reference_bpe.py" "$work"
if ! cmp -s "$here/mixed.txt" "$work/mixed.txt"; then
  echo "internal/bpe/testdata/mixed.txt differs from what reference_bpe.py writes now"
  exit 1
fi
for f in lanternbay_merges.golden mixed_merges.golden split.golden; do
  if ! diff -u <(grep -v '^#' "$here/$f") <(grep -v '^#' "$work/$f") >"$work/diff.txt"; then
    head -40 "$work/diff.txt"
    echo "internal/bpe/testdata/$f differs from what reference_bpe.py writes now"
    exit 1
  fi
done
echo "internal/bpe/testdata: reference_bpe.py writes the committed goldens again"
