// expect: exit=15
int main(void) {
    int a[5];
    int i;
    for (i = 0; i < 5; i++) a[i] = i + 1;
    return a[0] + a[1] + a[2] + a[3] + a[4];
}
