// expect: exit=7 stdout="before\n"
#include <stdio.h>
#include <stdlib.h>
int main(void) {
    printf("before\n");
    fflush(stdout);
    exit(7);
    printf("after\n");
    return 0;
}
