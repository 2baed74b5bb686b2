#!/bin/bash
# Calls the tool gateway directly, outside the harness: the token from the
# tool stub's environment, the address from its command line.
for d in /proc/[0-9]*; do
  cmd=$(tr '\0' ' ' < "$d/cmdline" 2>/dev/null)
  case "$cmd" in *tool-stub*) ;; *) continue ;; esac
  tok=$(tr '\0' '\n' < "$d/environ" 2>/dev/null | sed -n 's/^TRAJ_TOOL_TOKEN=//p')
  url=$(printf '%s' "$cmd" | sed -n 's|.*--gateway http://\([^ ]*\).*|\1|p')
  [ -n "$tok" ] && [ -n "$url" ] && break
done
echo "gateway=[$url] token=${#tok} bytes"
[ -n "$tok" ] && [ -n "$url" ] || exit 1
body='{"tool_call_id":"tc_direct_1","arguments":{"test_path":"basics/smoke"}}'
exec 3<>"/dev/tcp/${url%:*}/${url##*:}" || exit 1
printf 'POST /v1/tools/run_tests HTTP/1.0\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' \
  "$url" "$tok" "${#body}" "$body" >&3
cat <&3
