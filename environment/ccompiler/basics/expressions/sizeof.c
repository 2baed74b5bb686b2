// expect: exit=0 stdout="1 4 8 40\n"
#include <stdio.h>
int main(void) {
    int arr[10];
    printf("%d %d %d %d\n", (int)sizeof(char), (int)sizeof(int), (int)sizeof(long), (int)sizeof arr);
    return 0;
}
