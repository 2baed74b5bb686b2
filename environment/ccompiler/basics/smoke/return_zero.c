// expect: exit=0
int main(void) { return 0; }
