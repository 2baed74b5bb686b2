// expect: exit=0 stdout="a b\n"
#include <stdio.h>
void say(const char *s, int last) {
    if (last) { printf("%s\n", s); return; }
    printf("%s ", s);
}
int main(void) { say("a", 0); say("b", 1); return 0; }
