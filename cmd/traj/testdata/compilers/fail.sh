#!/bin/sh
# The control: a compiler that always fails.
echo "cc: no compiler here" >&2
exit 1
