// expect: exit=42
int main(void) { return 42; }
