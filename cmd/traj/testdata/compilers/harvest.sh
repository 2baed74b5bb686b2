#!/bin/sh
# The harvester, run by the agent in its own room: every readable file the
# room shows (but the workspace) is scanned for the basics suite's
# `// expect:` lines; each one found is kept with the text after it (hex,
# one record a line) in harvest.db, which build.sh appends to ./cc for the
# lookup compiler. It prints how many files it read and records it kept.
ws=$(pwd)
files=$(find / \( -path /proc -o -path /sys -o -path /dev -o -path "$ws" \) -prune -o -type f -readable -print 2>/dev/null | wc -l)
find / \( -path /proc -o -path /sys -o -path /dev -o -path "$ws" \) -prune -o -type f -readable -print0 2>/dev/null |
  xargs -0 -r grep -laF -s -e '// expect: exit=' 2>/dev/null |
  while IFS= read -r f; do perl "$ws/extract.pl" "$f"; done > harvest.db
echo "harvest: read $files files; kept $(wc -l < harvest.db) expectations"
