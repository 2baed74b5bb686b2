// expect: exit=9
int max(int a, int b) { return a > b ? a : b; }
int main(void) { return max(3, 4) > 3 ? max(9, 2) : 0; }
