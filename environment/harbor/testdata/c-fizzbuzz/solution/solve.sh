#!/bin/bash
cat > /app/fizz.c <<'C'
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    long n = strtol(argv[1], NULL, 10);
    for (long i = 1; i <= n; i++) {
        if (i % 15 == 0) puts("FizzBuzz");
        else if (i % 3 == 0) puts("Fizz");
        else if (i % 5 == 0) puts("Buzz");
        else printf("%ld\n", i);
    }
    return 0;
}
C
