// expect: exit=10
int add3(int a, int b, int c) { return a + b + c; }
int main(void) { return add3(2, 3, 5); }
