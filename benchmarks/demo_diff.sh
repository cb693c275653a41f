#!/usr/bin/env bash
# Behaviour check for refactors: runs the demo (`oral demo`, what `make run` runs) at two git
# revisions, each from its own worktree and state folder, and compares what it prints (the
# per-night lines and the class timeline) and its Markdown timeline after masking what may
# differ between two runs of the same code: wall times, training seconds, temporary paths,
# server ports, hashes and run ids. Writes benchmarks/results/demo_diff/demo_diff.md.
#   bash benchmarks/demo_diff.sh 2cb169a HEAD
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
python=${PYTHON:-$root/.venv/bin/python}
a=${1:?usage: demo_diff.sh REV_A REV_B}
b=${2:-HEAD}
work=$(mktemp -d /tmp/demo_diff.XXXXXX)
trap 'git worktree remove --force "$work/a" 2>/dev/null || true; git worktree remove --force "$work/b" 2>/dev/null || true' EXIT

mask() {  # what two runs of the same code may print differently
  sed -E -e "s#$work/(state_)?[ab]#STATE#g" \
         -e 's/[0-9]+(\.[0-9]+)? ?s\b/<secs>/g' \
         -e 's/"train_seconds": [0-9.e-]+/"train_seconds": <secs>/g' \
         -e 's#http://127\.0\.0\.1:[0-9]+#<url>#g' \
         -e 's/[0-9a-f]{12,64}/<id>/g' \
         -e 's/[0-9]{8}T[0-9.]+Z/<time>/g' \
         -e 's#^[0-9]{4}/[0-9]{2}/[0-9]{2} [0-9:]+ #<time> #'
}

for side in a b; do
  rev=${!side}
  git worktree add --quiet --detach "$work/$side" "$rev"
  # the checkout's own packages come first on sys.path (python -m from its root)
  (cd "$work/$side" && OMP_NUM_THREADS=1 "$python" -m cli.main demo --state-dir "$work/state_$side" \
      --out "$work/$side.md" >"$work/$side.log" 2>&1)
  # stdout lines of the demo (no log records), then the Markdown timeline
  grep -vE '^(INFO|WARNING|DEBUG) |^[0-9]{4}/[0-9]{2}/[0-9]{2} |^  Data Docs' "$work/$side.log" \
    | mask >"$work/$side.out"
  mask <"$work/$side.md" >"$work/$side.mdm"
done

out=benchmarks/results/demo_diff/demo_diff.md
{
  echo "# The demo at two revisions"
  echo
  echo "Made by \`bash benchmarks/demo_diff.sh $a $b\` ($(git rev-parse --short "$a") against $(git rev-parse --short "$b")) on $(date -u +%Y-%m-%d)."
  echo "Masked before comparing: wall times and seconds, temporary state paths, server URLs, hashes and ids."
  echo
  for part in out mdm; do
    name=$([ $part = out ] && echo "printed lines" || echo "Markdown timeline (--out)")
    lines=$(wc -l <"$work/a.$part")
    if diff -q "$work/a.$part" "$work/b.$part" >/dev/null; then
      echo "- $name: **identical** ($lines lines)"
    else
      echo "- $name: **differ**:"
      echo
      echo '```diff'
      diff "$work/a.$part" "$work/b.$part" | head -60 || true
      echo '```'
    fi
  done
  echo
  echo "The timeline of revision $b:"
  echo
  cat "$work/b.md"
} >"$out"
cat "$out" | head -8
