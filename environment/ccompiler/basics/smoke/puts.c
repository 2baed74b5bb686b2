// expect: exit=0 stdout="line one\nline two\n"
#include <stdio.h>
int main(void) {
    puts("line one");
    puts("line two");
    return 0;
}
