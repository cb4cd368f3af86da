#!/bin/sh
# A file resource that only accepts writes from the newest lock holder.
#   fenced-write.sh FILE FENCE < data
# Copies stdin to FILE unless a write with a higher fence was accepted before (kept in FILE.fence);
# exits 3 and writes nothing for a stale fence. Writers are serialised on FILE.lock with flock(1),
# and the data replaces FILE atomically (rename). Use it inside `redlock run` as
#   fenced-write.sh /srv/state.json "$REDLOCK_FENCE" < new-state.json
set -eu
file=$1
fence=$2
case $fence in
  '' | *[!0-9]*) echo "fenced-write: fence '$fence' is not a number" >&2; exit 2 ;;
esac
tmp=$(mktemp "$file.XXXXXX")
trap 'rm -f "$tmp"' EXIT
cat > "$tmp"
exec 9>>"$file.lock"
flock 9
seen=$(cat "$file.fence" 2>/dev/null || echo 0)
if [ "$fence" -lt "$seen" ]; then
  echo "fenced-write: stale fence $fence, $file already has $seen" >&2
  exit 3
fi
echo "$fence" > "$file.fence.tmp" && mv "$file.fence.tmp" "$file.fence"
mv "$tmp" "$file"
trap - EXIT
