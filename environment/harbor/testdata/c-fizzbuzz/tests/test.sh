#!/bin/bash
# Build the agent's program in the verifier's room and compare it with a
# reference written here (awk), for several N. The program runs as
# nobody: it cannot write the reward, nor can anything it leaves behind.
reward=0
trap 'echo $reward > /logs/verifier/reward.txt' EXIT
chmod 755 /logs/verifier
gcc -O2 -o /tmp/fizz /app/fizz.c || exit 0
chmod 755 /tmp/fizz
for n in 1 15 31 100; do
  awk -v n="$n" 'BEGIN { for (i = 1; i <= n; i++) print (i % 15 == 0 ? "FizzBuzz" : i % 3 == 0 ? "Fizz" : i % 5 == 0 ? "Buzz" : i) }' > /tmp/want
  timeout 10 setpriv --reuid=nobody --regid=nogroup --clear-groups /tmp/fizz "$n" > /tmp/got || { echo "fizz $n failed" >&2; exit 0; }
  cmp -s /tmp/want /tmp/got || { echo "fizz $n: wrong output" >&2; exit 0; }
done
reward=1
