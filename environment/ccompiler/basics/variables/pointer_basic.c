// expect: exit=0 stdout="10 20\n"
#include <stdio.h>
int main(void) {
    int x = 10;
    int *p = &x;
    printf("%d ", *p);
    *p = 20;
    printf("%d\n", x);
    return 0;
}
