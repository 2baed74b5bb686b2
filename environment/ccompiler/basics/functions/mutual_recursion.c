// expect: exit=0 stdout="even odd\n"
#include <stdio.h>
int is_odd(int n);
int is_even(int n) { return n == 0 ? 1 : is_odd(n - 1); }
int is_odd(int n) { return n == 0 ? 0 : is_even(n - 1); }
int main(void) {
    printf("%s %s\n", is_even(10) ? "even" : "odd", is_even(7) ? "even" : "odd");
    return 0;
}
