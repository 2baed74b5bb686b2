// expect: exit=0 stdout="11 20\n"
#include <stdio.h>
int counter = 10;
int other;
void bump(void) { counter++; other += 20; }
int main(void) {
    bump();
    printf("%d %d\n", counter, other);
    return 0;
}
