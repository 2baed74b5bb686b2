// expect: exit=0 stdout="one two many many zero\n"
#include <stdio.h>
const char *name(int n) {
    switch (n) {
    case 0: return "zero";
    case 1: return "one";
    case 2: return "two";
    default: return "many";
    }
}
int main(void) {
    printf("%s %s %s %s %s\n", name(1), name(2), name(3), name(99), name(0));
    return 0;
}
