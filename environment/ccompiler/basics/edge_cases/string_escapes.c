// expect: exit=0 stdout="tab\there \"quoted\" back\\slash\n"
#include <stdio.h>
int main(void) {
    printf("tab\there \"quoted\" back\\slash\n");
    return 0;
}
