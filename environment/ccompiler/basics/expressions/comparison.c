// expect: exit=63
int main(void) {
    int a = 3, b = 5;
    return (a < b) | (a <= b) << 1 | (b > a) << 2 | (b >= a) << 3 | (a != b) << 4 | (a == 3) << 5;
}
