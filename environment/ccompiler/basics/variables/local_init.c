// expect: exit=9
int main(void) {
    int a = 4;
    int b = 5;
    return a + b;
}
