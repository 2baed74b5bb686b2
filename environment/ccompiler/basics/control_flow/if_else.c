// expect: exit=2
int main(void) {
    int a = 5;
    if (a > 10) return 1;
    else if (a > 3) return 2;
    else return 3;
}
