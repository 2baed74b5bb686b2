// expect: exit=0 stdout="200 -56 255\n"
#include <stdio.h>
int main(void) {
    unsigned char u = 200;
    signed char s = (signed char)200;
    unsigned char m = (unsigned char)-1;
    printf("%d %d %d\n", u, s, m);
    return 0;
}
