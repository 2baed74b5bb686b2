// expect: exit=1 stdout="3 2 1\n"
#include <stdio.h>
int main(void) {
    int x = 1;
    {
        int x = 2;
        {
            int x = 3;
            printf("%d ", x);
        }
        printf("%d ", x);
    }
    printf("%d\n", x);
    return x;
}
