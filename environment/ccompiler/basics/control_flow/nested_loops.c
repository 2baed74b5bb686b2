// expect: exit=0 stdout="1 2 3\n2 4 6\n3 6 9\n"
#include <stdio.h>
int main(void) {
    for (int i = 1; i <= 3; i++) {
        for (int j = 1; j <= 3; j++) {
            printf(j < 3 ? "%d " : "%d\n", i * j);
        }
    }
    return 0;
}
