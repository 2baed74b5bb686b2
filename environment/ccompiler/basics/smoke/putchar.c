// expect: exit=0 stdout="ok\n"
#include <stdio.h>
int main(void) {
    putchar('o');
    putchar('k');
    putchar('\n');
    return 0;
}
