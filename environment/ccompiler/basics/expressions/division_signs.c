// expect: exit=0 stdout="-3 -1 3 1 -3 -1\n"
#include <stdio.h>
int main(void) {
    printf("%d %d %d %d %d %d\n", -7 / 2, -7 % 2, 7 / 2, 7 % 2, 7 / -2, -7 % 2);
    return 0;
}
