// expect: exit=0 stdout="5 7 7 5\n"
#include <stdio.h>
int main(void) {
    int i = 5;
    int a = i++;
    int b = ++i;
    int c = i--;
    --i;
    printf("%d %d %d %d\n", a, b, c, i);
    return 0;
}
