#!/bin/bash
# The expected answer lives only here, in the verifier's room.
printf 'the\ndog\nbird\n' > /tmp/expected
if cmp -s /tmp/expected /app/report.txt; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "report.txt differs from the expected words" >&2
  echo 0 > /logs/verifier/reward.txt
fi
