// expect: exit=0 stdout="77031 350\n"
#include <stdio.h>
int main(void) {
    long best = 0, best_len = 0;
    for (long n = 1; n < 100000; n++) {
        long x = n, len = 1;
        while (x != 1) { x = (x % 2) ? 3 * x + 1 : x / 2; len++; }
        if (len > best_len) { best_len = len; best = n; }
    }
    printf("%ld %ld\n", best, best_len - 1);
    return 0;
}
