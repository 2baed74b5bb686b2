// expect: exit=0 stdout="area=12\n"
#include <stdio.h>
struct rect { int w; int h; };
int area(struct rect *r);
int main(void) {
    struct rect r = {3, 4};
    printf("area=%d\n", area(&r));
    return 0;
}
