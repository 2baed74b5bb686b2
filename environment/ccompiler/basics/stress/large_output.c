// expect: exit=0 stdout="4000\n"
#include <stdio.h>
int main(void) {
    char buf[16];
    int total = 0;
    for (int i = 0; i < 1000; i++) total += sprintf(buf, "%03d,", i % 1000);
    printf("%d\n", total);
    return 0;
}
