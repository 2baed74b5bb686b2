// expect: exit=0 stdout="hello, world\n"
#include <stdio.h>
int main(void) {
    printf("hello, world\n");
    return 0;
}
