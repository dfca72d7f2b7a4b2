#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Tests write into temporary directories, never the checkout: make check
# lists the files outside git's index before the tests (snapshot FILE) and
# fails naming each one that appeared during them (verify FILE), ignored
# or not (a .pyc, a fio verify state file). The build trees and the fetched
# fio sources (build*/, .deps/) are the only places a build writes.
set -euo pipefail
cd "$(dirname "$0")/.."
listing() { git ls-files --others | grep -Ev '^(build[^/]*|\.deps)/' | sort || true; }
case "${1:-}" in
snapshot) listing >"$2" ;;
verify)
  new=$(comm -13 "$2" <(listing))
  if [[ -n $new ]]; then
    echo "make check: the tests wrote into the checkout (they must use temporary directories):" >&2
    sed 's/^/  /' <<<"$new" >&2
    exit 1
  fi
  ;;
*)
  echo "usage: $0 snapshot FILE | verify FILE" >&2
  exit 2
  ;;
esac
