// expect: exit=1
int main(void) { return 257; }
