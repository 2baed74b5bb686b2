// expect: exit=0 stdout="1 100\n"
#include <stdio.h>
static int hidden = 1;
int other_hidden(void);
int main(void) {
    printf("%d %d\n", hidden, other_hidden());
    return 0;
}
