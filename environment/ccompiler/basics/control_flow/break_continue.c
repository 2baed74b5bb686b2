// expect: exit=0 stdout="1 3 5 7 \n"
#include <stdio.h>
int main(void) {
    for (int i = 0; ; i++) {
        if (i > 8) break;
        if (i % 2 == 0) continue;
        printf("%d ", i);
    }
    printf("\n");
    return 0;
}
