// expect: exit=21
int main(void) {
    int a, b, c;
    a = b = c = 7;
    return a + b + c;
}
