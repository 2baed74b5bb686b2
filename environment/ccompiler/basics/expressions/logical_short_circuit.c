// expect: exit=0 stdout="1 0 1\n"
#include <stdio.h>
int calls;
int touch(int v) { calls++; return v; }
int main(void) {
    int a = 0 && touch(1);
    int b = 1 || touch(1);
    int c = touch(1) && touch(1);
    printf("%d %d %d\n", a == 0, b == 0, calls == 2);
    return 0;
}
