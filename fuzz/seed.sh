#!/usr/bin/env bash
# Fills fuzz/corpus/<target>/ with seeds: the real documents of ../shared/corpus (when present),
# the fixtures, the builtin items, the hand-written LSP sessions in fuzz/seeds/, and every
# input in fuzz/regressions/<target>/. Idempotent; the corpus dirs are not committed.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=fuzz/corpus
mkdir -p "$corpus"/{directive,python_tool,yaml_tool,knowledge,lsp_messages,javascript_tool}

# A seed is the user's own file, writable whatever the source's mode: the shared corpus is
# read-only, and `cp` would keep that mode, so a second copy of the same content (a rerun, or
# two corpus files alike) failed with "Permission denied" for anyone but root. Heal the seeds an
# older seed.sh left read-only.
chmod -R u+w "$corpus"

# name a seed by its content, so reruns do not duplicate (same name, same content: kept)
put() { # target file
  local h dst
  h=$(sha1sum "$2" | cut -c1-16)
  dst="$corpus/$1/seed-$h"
  [ -e "$dst" ] || install -m 0644 "$2" "$dst"
}

shared=""
for d in ${KIWI_CORPUS:-} ../shared/corpus /work/shared/corpus; do
  [ -d "$d" ] && { shared=$d; break; }
done
if [ -z "$shared" ] && [ -n "${KIWI_REQUIRE_CORPUS:-}${CI:-}" ]; then
  echo "seed.sh: no shared corpus found (../shared/corpus, KIWI_CORPUS) and KIWI_REQUIRE_CORPUS or CI is set" >&2
  exit 1
fi
if [ -n "$shared" ]; then
  while IFS= read -r f; do
    case "$f" in
      */.ai/knowledge/*) put knowledge "$f" ;;
      *) put directive "$f" ;;
    esac
  done < <(find "$shared" -name '*.md' ! -name README.md -type f)
else
  echo "seed.sh: no shared corpus found (../shared/corpus); using the fixtures only" >&2
fi

for root in fixtures server/kernel/builtin; do
  while IFS= read -r f; do
    case "$f" in
      */directives/*.md) put directive "$f" ;;
      */knowledge/*.md) put knowledge "$f" ;;
      */tools/*.py) put python_tool "$f" ;;
      */tools/*.ts | */tools/*.js | */tools/*.mjs | */tools/*.cjs) put javascript_tool "$f" ;;
      */tools/*.yaml | */tools/*.yml) put yaml_tool "$f" ;;
    esac
  done < <(find "$root" -path '*/.ai/*' -type f -o -path '*/builtin/*' -type f)
done
# YAML also appears as knowledge frontmatter and config files.
while IFS= read -r f; do put yaml_tool "$f"; done < <(find fixtures server/kernel/builtin -name '*.yaml' -type f)

for d in fuzz/seeds/*/; do
  t=$(basename "$d")
  for f in "$d"*; do [ -f "$f" ] && put "$t" "$f"; done
done
if [ -d fuzz/regressions ]; then
  for d in fuzz/regressions/*/; do
    t=$(basename "$d")
    for f in "$d"*; do [ -f "$f" ] && put "$t" "$f"; done
  done
fi
for t in "$corpus"/*/; do
  printf '%-14s %s seeds\n' "$(basename "$t")" "$(find "$t" -type f | wc -l)"
done
