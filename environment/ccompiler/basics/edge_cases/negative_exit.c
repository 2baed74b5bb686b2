// expect: exit=255
int main(void) { return -1; }
