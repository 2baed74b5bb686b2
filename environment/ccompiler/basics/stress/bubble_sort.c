// expect: exit=0 stdout="0 1 2 3 4 5 6 7 8 9\n"
#include <stdio.h>
int main(void) {
    int a[10] = {9, 3, 7, 1, 0, 8, 2, 6, 4, 5};
    for (int i = 0; i < 10; i++)
        for (int j = 0; j + 1 < 10 - i; j++)
            if (a[j] > a[j + 1]) { int t = a[j]; a[j] = a[j + 1]; a[j + 1] = t; }
    for (int i = 0; i < 10; i++) printf(i < 9 ? "%d " : "%d\n", a[i]);
    return 0;
}
