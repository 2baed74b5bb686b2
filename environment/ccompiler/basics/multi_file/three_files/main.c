// expect: exit=30
int square(int x);
int twice(int x);
int main(void) { return square(5) + twice(2) + 1; }
