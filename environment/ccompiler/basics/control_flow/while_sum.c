// expect: exit=55
int main(void) {
    int i = 1, s = 0;
    while (i <= 10) { s += i; i++; }
    return s;
}
