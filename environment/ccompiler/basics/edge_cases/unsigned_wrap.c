// expect: exit=0 stdout="4294967295 0\n"
#include <stdio.h>
int main(void) {
    unsigned int u = 0;
    u = u - 1;
    unsigned int v = u + 1;
    printf("%u %u\n", u, v);
    return 0;
}
