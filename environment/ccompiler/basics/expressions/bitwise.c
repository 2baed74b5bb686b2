// expect: exit=0 stdout="8 14 6 192 3\n"
#include <stdio.h>
int main(void) {
    int a = 12, b = 10;
    printf("%d %d %d %d %d\n", a & b, a | b, a ^ b, a << 4, a >> 2);
    return 0;
}
