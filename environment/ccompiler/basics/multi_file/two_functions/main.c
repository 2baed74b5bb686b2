// expect: exit=0 stdout="7\n"
#include <stdio.h>
int add(int a, int b);
int main(void) {
    printf("%d\n", add(3, 4));
    return 0;
}
