// expect: exit=23
int main(void) { return 3 + 4 * 5 - 6 / 3 + (1 << 1); }
