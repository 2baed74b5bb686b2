// expect: exit=12
int twice(int x) { return 2 * x; }
int square(int x) { return x * x; }
int apply(int (*f)(int), int x) { return f(x); }
int main(void) { return apply(twice, 2) + apply(square, 2) + apply(twice, 2); }
