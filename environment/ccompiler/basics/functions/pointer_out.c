// expect: exit=0 stdout="q=4 r=2\n"
#include <stdio.h>
void divmod(int a, int b, int *q, int *r) { *q = a / b; *r = a % b; }
int main(void) {
    int q, r;
    divmod(14, 3, &q, &r);
    printf("q=%d r=%d\n", q, r);
    return 0;
}
