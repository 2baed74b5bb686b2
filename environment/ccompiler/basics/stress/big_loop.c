// expect: exit=0 stdout="49999995000000\n"
#include <stdio.h>
int main(void) {
    long s = 0;
    for (long i = 0; i < 10000000; i++) s += i;
    printf("%ld\n", s);
    return 0;
}
