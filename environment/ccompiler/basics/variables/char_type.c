// expect: exit=0 stdout="A B 66\n"
#include <stdio.h>
int main(void) {
    char a = 'A';
    char b = a + 1;
    printf("%c %c %d\n", a, b, b);
    return 0;
}
