#!/bin/bash
set -e
cd /app
tr -s ' ' '\n' < input.txt | grep -v '^$' | sort | uniq -c | sort -k1,1nr -k2 | head -3 | awk '{print $2}' > report.txt
