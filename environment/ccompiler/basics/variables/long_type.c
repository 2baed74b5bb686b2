// expect: exit=0 stdout="5000000000\n"
#include <stdio.h>
int main(void) {
    long big = 5000000000L;
    printf("%ld\n", big);
    return big == 5000000000L ? 0 : 1;
}
