// expect: exit=0 stdout="0 1 2 3 4 \n"
#include <stdio.h>
int main(void) {
    for (int i = 0; i < 5; i++) printf("%d ", i);
    printf("\n");
    return 0;
}
