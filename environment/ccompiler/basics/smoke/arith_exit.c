// expect: exit=14
int main(void) { return 2 + 3 * 4; }
