// expect: exit=24
int fold(int (*f)(int, int), int init, int n);
static int mul(int a, int b) { return a * b; }
int main(void) { return fold(mul, 1, 4); }
