// expect: exit=0 stdout="9592\n"
#include <stdio.h>
static char composite[100001];
int main(void) {
    int count = 0;
    for (int i = 2; i <= 100000; i++) {
        if (composite[i]) continue;
        count++;
        for (long j = (long)i * i; j <= 100000; j += i) composite[j] = 1;
    }
    printf("%d\n", count);
    return 0;
}
