// expect: exit=3 stdout="1 2 3\n"
#include <stdio.h>
int next(void) {
    static int n = 0;
    return ++n;
}
int main(void) {
    int a = next(), b = next(), c = next();
    printf("%d %d %d\n", a, b, c);
    return c;
}
