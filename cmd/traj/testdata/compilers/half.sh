#!/bin/sh
# An honest half-compiler: gcc for the sources whose SHA-256 starts with
# 0-7, a refusal for the rest. Which half a case falls in depends on the
# source it is shown, nonce included: its score is a function of the
# store's secret, so ground truth and replay evaluate must agree.
for a in "$@"; do case "$a" in *.c) s=$a; break;; esac; done
case "$(sha256sum "$s" | cut -c1)" in [0-7]) exec gcc -w "$@";; esac
echo "not this half" >&2
exit 1
