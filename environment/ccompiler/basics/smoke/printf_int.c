// expect: exit=0 stdout="x=7 y=-3\n"
#include <stdio.h>
int main(void) {
    int x = 7, y = -3;
    printf("x=%d y=%d\n", x, y);
    return 0;
}
