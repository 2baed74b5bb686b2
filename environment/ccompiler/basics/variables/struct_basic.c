// expect: exit=0 stdout="3,4 25\n"
#include <stdio.h>
struct point { int x; int y; };
int main(void) {
    struct point p;
    p.x = 3;
    p.y = 4;
    printf("%d,%d %d\n", p.x, p.y, p.x * p.x + p.y * p.y);
    return 0;
}
