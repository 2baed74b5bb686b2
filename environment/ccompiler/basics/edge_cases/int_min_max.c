// expect: exit=0 stdout="2147483647 -2147483648\n"
#include <stdio.h>
#include <limits.h>
int main(void) {
    printf("%d %d\n", INT_MAX, INT_MIN);
    return 0;
}
