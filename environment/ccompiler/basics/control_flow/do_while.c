// expect: exit=1
int main(void) {
    int n = 0;
    do { n++; } while (0);
    return n;
}
